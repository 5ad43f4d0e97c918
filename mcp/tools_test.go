package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/mcp/mcptest"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
)

func listTools(t *testing.T, f *fixture) map[string]mcptest.Tool {
	t.Helper()
	tools, err := f.client.ListTools(f.ctx())
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	out := map[string]mcptest.Tool{}
	for _, tl := range tools {
		out[tl.Name] = tl
	}
	return out
}

func compile(t *testing.T, name string, schema json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatalf("%s: schema is not JSON: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	url := "mem://" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: schema does not compile: %v", name, err)
	}
	return s
}

// walkBounds checks that every string has a maxLength (or an enum), every
// array a maxItems and every number a maximum.
func walkBounds(t *testing.T, where string, node map[string]any) {
	t.Helper()
	switch node["type"] {
	case "string":
		_, ml := node["maxLength"]
		_, en := node["enum"]
		if !ml && !en {
			t.Errorf("%s: string without maxLength", where)
		}
	case "array":
		if _, ok := node["maxItems"]; !ok {
			t.Errorf("%s: array without maxItems", where)
		}
	case "integer", "number":
		if _, ok := node["maximum"]; !ok {
			t.Errorf("%s: number without maximum", where)
		}
	case "object":
		props, _ := node["properties"].(map[string]any)
		if len(props) == 0 {
			if _, ok := node["maxProperties"]; !ok && node["additionalProperties"] != false {
				t.Errorf("%s: open object without maxProperties", where)
			}
		}
		for k, v := range props {
			if sub, ok := v.(map[string]any); ok {
				walkBounds(t, where+"."+k, sub)
			}
		}
	}
	if items, ok := node["items"].(map[string]any); ok {
		walkBounds(t, where+"[]", items)
	}
}

// walkTyped checks that every node of an output schema says its type, and
// that a free JSON value says what it holds.
func walkTyped(t *testing.T, where string, node map[string]any) {
	t.Helper()
	typ, ok := node["type"]
	// A node of several types is anyOf branches of one type each (see
	// singleTypes): every branch must be typed.
	branches, _ := node["anyOf"].([]any)
	if !ok && len(branches) == 0 {
		t.Errorf("%s: no type: %v", where, node)
	}
	list, _ := typ.([]any)
	if len(list) > 3 || len(branches) > 3 {
		if d, _ := node["description"].(string); d == "" {
			t.Errorf("%s: a free JSON value without a description", where)
		}
	}
	for _, b := range branches {
		if sub, ok := b.(map[string]any); ok {
			walkTyped(t, where+"|", sub)
		}
	}
	props, _ := node["properties"].(map[string]any)
	for k, v := range props {
		if sub, ok := v.(map[string]any); ok {
			walkTyped(t, where+"."+k, sub)
		}
	}
	if items, ok := node["items"].(map[string]any); ok {
		walkTyped(t, where+"[]", items)
	}
}

func TestToolList(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	tools := listTools(t, f)
	for _, name := range mcptest.CairnTools {
		tl, ok := tools[name]
		if !ok {
			t.Errorf("tool %s missing", name)
			continue
		}
		if len(tl.Description) < 40 {
			t.Errorf("%s: description %q is too short to guide an agent", name, tl.Description)
		}
		compile(t, name+".input", tl.InputSchema)
		compile(t, name+".output", tl.OutputSchema)
		var in map[string]any
		if err := json.Unmarshal(tl.InputSchema, &in); err != nil {
			t.Fatal(err)
		}
		if in["type"] != "object" {
			t.Errorf("%s: input schema type %v", name, in["type"])
		}
		walkBounds(t, name, in)
		var out map[string]any
		if err := json.Unmarshal(tl.OutputSchema, &out); err != nil {
			t.Fatal(err)
		}
		if out["type"] != "object" {
			t.Errorf("%s: output schema type %v", name, out["type"])
		}
		walkTyped(t, name+".output", out)
		for _, h := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
			if _, ok := tl.Annotations[h].(bool); !ok {
				t.Errorf("%s: annotation %s not set", name, h)
			}
		}
		if tl.Annotations["readOnlyHint"] == true && tl.Annotations["destructiveHint"] == true {
			t.Errorf("%s: read-only and destructive", name)
		}
	}
	for _, name := range []string{"launch_run", "read_run_output"} {
		var in struct {
			Properties map[string]struct {
				Maximum float64 `json:"maximum"`
			} `json:"properties"`
		}
		_ = json.Unmarshal(tools[name].InputSchema, &in)
		if got := in.Properties["wait_seconds"].Maximum; got != 60 {
			t.Errorf("%s: wait_seconds maximum %v, want 60", name, got)
		}
	}
}

// TestInitialize checks the server's answer to initialize: capabilities
// for tools and subscribable resources, and instructions.
func TestInitialize(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{noInit: true})
	m, err := f.client.Initialize(f.ctx(), "probe")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		ServerInfo   struct{ Name string } `json:"serverInfo"`
		Capabilities struct {
			Tools     map[string]any `json:"tools"`
			Resources struct {
				Subscribe bool `json:"subscribe"`
			} `json:"resources"`
		} `json:"capabilities"`
		Instructions string `json:"instructions"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.ServerInfo.Name != serverName || res.Capabilities.Tools == nil || !res.Capabilities.Resources.Subscribe {
		t.Errorf("initialize result %s", m.Result)
	}
	for _, w := range []string{"launch_run", "read_run_output", "answer_run", "worker"} {
		if !strings.Contains(res.Instructions, w) {
			t.Errorf("instructions do not mention %s", w)
		}
	}
}

// checkOutput validates a result's structured content against the tool's
// output schema.
func checkOutput(t *testing.T, schemas map[string]*jsonschema.Schema, tool string, r *mcptest.ToolResult) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.StructuredContent))
	if err != nil {
		t.Fatalf("%s: structured content: %v", tool, err)
	}
	if err := schemas[tool].Validate(v); err != nil {
		t.Errorf("%s: structured content does not match the output schema: %v\n%s", tool, err, r.StructuredContent)
	}
	if r.Text() == "" {
		t.Errorf("%s: no text content", tool)
	}
}

// TestEveryTool calls every tool at least once through the fakes and
// validates each answer against its output schema.
func TestEveryTool(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{clientName: "Claude Code"})
	schemas := map[string]*jsonschema.Schema{}
	for name, tl := range listTools(t, f) {
		schemas[name] = compile(t, name, tl.OutputSchema)
	}
	called := map[string]bool{}
	call := func(tool string, args any, out any) {
		t.Helper()
		r := f.call(tool, args)
		if r.IsError {
			t.Fatalf("%s: %s", tool, r.Text())
		}
		checkOutput(t, schemas, tool, r)
		if out != nil {
			if err := json.Unmarshal(r.StructuredContent, out); err != nil {
				t.Fatal(err)
			}
		}
		called[tool] = true
	}

	call("list_targets", nil, nil)
	var run runs.Run
	call("launch_run", map[string]any{"target": "noop", "input": map[string]any{"a": 1}}, &run)
	if run.Status != "succeeded" || string(run.Input) != `{"a":1}` {
		t.Errorf("launch_run: %+v", run)
	}
	call("get_run", map[string]any{"run_id": run.ID}, nil)
	var page runPage
	call("list_runs", map[string]any{"status": "succeeded", "limit": 5}, &page)
	if len(page.Runs) != 1 || page.Runs[0].ID != run.ID {
		t.Errorf("list_runs: %+v", page)
	}
	var out outputPage
	call("read_run_output", map[string]any{"run_id": run.ID}, &out)
	if !out.Done || len(out.Records) != 2 {
		t.Errorf("read_run_output: %+v", out)
	}
	var asked runs.Run
	call("launch_run", map[string]any{"target": "ask"}, &asked)
	if asked.Status != "waiting" || asked.Question == nil {
		t.Fatalf("ask run: %+v", asked)
	}
	call("answer_run", map[string]any{"run_id": asked.ID, "answer": "yes"}, &asked)
	if asked.Status != "succeeded" {
		t.Errorf("answered run: %+v", asked)
	}
	if msg := f.fails("answer_run", map[string]any{"run_id": asked.ID, "answer": "yes"}); !strings.Contains(msg, "not waiting") {
		t.Errorf("second answer: %q", msg)
	}
	var steps runs.Run
	call("launch_run", map[string]any{"target": "steps"}, &steps)
	call("cancel_run", map[string]any{"run_id": steps.ID}, &steps)
	if steps.Status != "cancelled" {
		t.Errorf("cancelled run: %+v", steps)
	}

	var created createAutomationOut
	call("create_automation", map[string]any{"key": "nightly", "target": "noop", "cron": "0 3 * * *", "tz": "Europe/Paris"}, &created)
	if !created.Created || created.Automation.Owner != "agent:Claude-Code" {
		t.Errorf("create_automation: %+v", created.Automation)
	}
	var again createAutomationOut
	call("create_automation", map[string]any{"key": "nightly", "target": "noop", "cron": "0 3 * * *", "tz": "Europe/Paris"}, &again)
	if again.Created || again.Automation.ID != created.Automation.ID {
		t.Errorf("create_automation again: %+v", again)
	}
	if msg := f.fails("create_automation", map[string]any{"key": "other", "target": "noop", "every": "1h", "owner": "someone-else"}); !strings.Contains(msg, "cannot choose the owner") || !strings.Contains(msg, "agents.") {
		t.Errorf("create_automation with an owner: %q; want it refused, naming the policy key", msg)
	}
	if _, err := f.srv.p.Automations.Create(context.Background(), automations.CreateParams{Owner: "human", Spec: automations.Spec{Key: "other", Target: "noop", Every: "1h"}}); err != nil {
		t.Fatal(err)
	}
	var mine, all automationsOut
	call("list_automations", nil, &mine)
	call("list_automations", map[string]any{"all": true}, &all)
	if len(mine.Automations) != 1 || len(all.Automations) != 2 || mine.Owner != "agent:Claude-Code" {
		t.Errorf("list_automations: mine %d (owner %s), all %d", len(mine.Automations), mine.Owner, len(all.Automations))
	}
	var fired fire
	call("trigger_automation", map[string]any{"id": created.Automation.ID}, &fired)
	if fired.Run == nil || fired.Run.Target != "noop" || fired.Outcome != "queued" {
		t.Errorf("trigger_automation: %+v", fired)
	}
	var upd automation
	call("update_automation", map[string]any{"id": created.Automation.ID, "enabled": false, "note": "holiday"}, &upd)
	if upd.Enabled || upd.Note != "holiday" {
		t.Errorf("update_automation: %+v", upd)
	}
	call("delete_automation", map[string]any{"id": created.Automation.ID}, nil)
	if msg := f.fails("create_automation", map[string]any{"key": "bad", "target": "noop", "cron": "bad"}); !strings.Contains(msg, "cron") {
		t.Errorf("bad cron: %q", msg)
	}

	var cs createSessionOut
	call("create_session", map[string]any{"session_id": "s1", "title": "first"}, &cs)
	if !cs.Created || cs.Session.ID != "s1" {
		t.Errorf("create_session: %+v", cs)
	}
	call("create_session", map[string]any{"session_id": "s1"}, &cs)
	if cs.Created {
		t.Errorf("create_session again: created")
	}
	msgs := []any{}
	for i := range 6 {
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("m%d", i)})
	}
	msgs = append(msgs, map[string]any{"role": "tool", "parts": []any{map[string]any{"type": "tool_result", "output": "x"}}, "metadata": map[string]any{"k": "v"}})
	var ap appendOut
	call("append_session_messages", map[string]any{"session_id": "s1", "messages": msgs}, &ap)
	if len(ap.Appended) != 7 || ap.Session.MessageCount != 7 {
		t.Errorf("append: %+v", ap)
	}
	var sp sessionRead
	call("get_session", map[string]any{"session_id": "s1", "limit": 3}, &sp)
	if len(sp.Messages) != 3 || !bytes.Contains(sp.Messages[0].Parts, []byte(`"text":"m0"`)) {
		t.Errorf("get_session: %+v", sp)
	}
	call("list_sessions", nil, nil)
	call("compact_session", map[string]any{"session_id": "s1", "summary": "they said m0..m6", "keep_last": 2}, nil)
	call("delete_session", map[string]any{"session_id": "s1"}, nil)

	for _, name := range mcptest.CairnTools {
		if !called[name] {
			t.Errorf("tool %s was not called", name)
		}
	}
}

// TestLaunchWaitProgress launches a run with wait_seconds and a progress
// token, makes the run emit output and settle while the call waits, and
// checks the progress notifications and the settled answer.
func TestLaunchWaitProgress(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	_, ch, err := f.client.Request("tools/call", map[string]any{
		"name": "launch_run", "arguments": map[string]any{"target": "steps", "wait_seconds": 60},
		"_meta": map[string]any{"progressToken": 7},
	})
	if err != nil {
		t.Fatal(err)
	}
	isProgress := func(m mcptest.Message) bool { tok, ok := progressOf(m); return ok && tok == "7" }
	if _, err := f.client.WaitFor(f.ctx(), isProgress); err != nil {
		t.Fatal(err)
	}
	id := f.runs.first()
	f.runs.emit(id, "hello")
	if _, err := f.client.WaitFor(f.ctx(), func(m mcptest.Message) bool {
		return isProgress(m) && bytes.Contains(m.Params, []byte("output records"))
	}); err != nil {
		t.Fatal(err)
	}
	f.runs.settle(id, store.RunSucceeded)
	var run runs.Run
	m := f.awaitOK("launch_run", ch, &run)
	if run.Status != "succeeded" {
		t.Errorf("launch_run waited and returned %+v", run)
	}
	for _, msg := range f.client.Messages() {
		if isProgress(msg) && msg.Index > m.Index {
			t.Errorf("progress after the response: %s", msg.Raw)
		}
	}
}

// TestReadOutputCursor pages through a journal with the cursor and long
// polls for the next record.
func TestReadOutputCursor(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	var run runs.Run
	f.ok("launch_run", map[string]any{"target": "steps"}, &run)
	for i := range 5 {
		f.runs.emit(run.ID, fmt.Sprintf("line %d", i))
	}
	var got []outputRecord
	cursor := ""
	for {
		var page outputPage
		f.ok("read_run_output", map[string]any{"run_id": run.ID, "cursor": cursor, "limit": 2}, &page)
		got = append(got, page.Records...)
		if len(page.Records) == 0 {
			break
		}
		cursor = page.NextCursor
	}
	if len(got) != 6 { // start + 5 lines
		t.Fatalf("read %d records, want 6", len(got))
	}
	// A long poll answers when the run ends.
	_, ch, err := f.client.Request("tools/call", map[string]any{"name": "read_run_output", "arguments": map[string]any{"run_id": run.ID, "cursor": cursor, "wait_seconds": 60}})
	if err != nil {
		t.Fatal(err)
	}
	f.runs.settle(run.ID, store.RunFailed)
	var page outputPage
	f.awaitOK("read_run_output", ch, &page)
	if !page.Done || len(page.Records) != 1 || page.Status != "failed" {
		t.Errorf("long poll: %+v", page)
	}
}

// TestResourceSubscription subscribes to a run and its output, changes
// the run behind the server's back (as another process would) and waits
// for notifications/resources/updated.
func TestResourceSubscription(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	var run runs.Run
	f.ok("launch_run", map[string]any{"target": "steps"}, &run)
	for _, uri := range []string{runURI(run.ID), runOutputURI(run.ID)} {
		if m, err := f.client.Call(f.ctx(), "resources/subscribe", map[string]any{"uri": uri}); err != nil || m.Error != nil {
			t.Fatalf("subscribe %s: %v %s", uri, err, m.Raw)
		}
	}
	if m, _ := f.client.Call(f.ctx(), "resources/subscribe", map[string]any{"uri": runURI("run_missing")}); m.Error == nil {
		t.Errorf("subscribe to a missing run: %s", m.Raw)
	}
	updated := func(uri string) func(mcptest.Message) bool {
		return func(m mcptest.Message) bool {
			return m.Method == "notifications/resources/updated" && bytes.Contains(m.Params, []byte(`"`+uri+`"`))
		}
	}
	f.runs.emit(run.ID, "changed elsewhere")
	for _, uri := range []string{runURI(run.ID), runOutputURI(run.ID)} {
		if _, err := f.client.WaitFor(f.ctx(), updated(uri)); err != nil {
			t.Fatalf("no update for %s: %v", uri, err)
		}
	}
	// Reading the resources.
	m, err := f.client.Call(f.ctx(), "resources/read", map[string]any{"uri": runURI(run.ID)})
	if err != nil || m.Error != nil || !bytes.Contains(m.Result, []byte(run.ID)) {
		t.Fatalf("read run: %v %s", err, m.Raw)
	}
	m, err = f.client.Call(f.ctx(), "resources/read", map[string]any{"uri": runOutputURI(run.ID)})
	if err != nil || m.Error != nil || !bytes.Contains(m.Result, []byte("changed elsewhere")) {
		t.Fatalf("read output: %v %s", err, m.Raw)
	}
	m, err = f.client.Call(f.ctx(), "resources/templates/list", nil)
	if err != nil || !bytes.Contains(m.Result, []byte("cairn://runs/{run_id}/output")) {
		t.Fatalf("templates: %v %s", err, m.Raw)
	}
	// After unsubscribing from the record, only output updates come.
	if m, err := f.client.Call(f.ctx(), "resources/unsubscribe", map[string]any{"uri": runURI(run.ID)}); err != nil || m.Error != nil {
		t.Fatal(err, m.Raw)
	}
	before := len(f.client.Messages())
	f.runs.settle(run.ID, store.RunSucceeded)
	last, err := f.client.WaitFor(f.ctx(), func(m mcptest.Message) bool {
		return m.Index >= before && updated(runOutputURI(run.ID))(m)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range f.client.Messages()[before:] {
		if updated(runURI(run.ID))(m) && m.Index <= last.Index {
			t.Errorf("update after unsubscribe: %s", m.Raw)
		}
	}
}

func TestUnavailableDomains(t *testing.T) {
	t.Parallel()
	srv := New(Params{})
	ctx := context.Background()
	for _, st := range srv.tools() {
		if !slices.Contains(mcptest.CairnTools, st.Tool.Name) {
			t.Errorf("unexpected tool %s", st.Tool.Name)
		}
		res, err := st.Handler(ctx, callRequest(st.Tool.Name, minimalArgs[st.Tool.Name]))
		if err != nil {
			t.Fatalf("%s: %v", st.Tool.Name, err)
		}
		if !res.IsError || !strings.Contains(fmt.Sprint(res.Content), "not available") {
			t.Errorf("%s without its service: %+v", st.Tool.Name, res)
		}
	}
}

var minimalArgs = map[string]map[string]any{
	"launch_run":              {"target": "noop"},
	"get_run":                 {"run_id": "r1"},
	"read_run_output":         {"run_id": "r1"},
	"answer_run":              {"run_id": "r1", "answer": "yes"},
	"cancel_run":              {"run_id": "r1"},
	"create_automation":       {"key": "k", "target": "noop", "every": "1m"},
	"update_automation":       {"id": "a1"},
	"delete_automation":       {"id": "a1"},
	"trigger_automation":      {"id": "a1"},
	"get_session":             {"session_id": "s1"},
	"append_session_messages": {"session_id": "s1", "messages": []any{map[string]any{"role": "user", "content": "x"}}},
	"compact_session":         {"session_id": "s1", "summary": "x"},
	"delete_session":          {"session_id": "s1"},
}

func callRequest(name string, args map[string]any) mcpgo.CallToolRequest {
	var req mcpgo.CallToolRequest
	req.Params.Name = name
	if args != nil {
		req.Params.Arguments = args
	}
	return req
}

// TestSettledRunsLeftAlone checks that the watcher stops polling a
// subscribed run once it settled and stayed unchanged.
func TestSettledRunsLeftAlone(t *testing.T) {
	t.Parallel()
	eng := newFakeEngine(nil)
	srv := New(Params{Runs: eng, RunStore: eng})
	run, err := eng.Launch(context.Background(), runs.LaunchParams{Target: "noop"}) // settled at once
	if err != nil {
		t.Fatal(err)
	}
	sess := testSession{}
	srv.subs.add(sess, runURI(run.ID))
	for range settledChecks + 1 {
		srv.subs.check(context.Background())
	}
	eng.mu.Lock()
	before := eng.versions
	eng.mu.Unlock()
	for range 5 {
		srv.subs.check(context.Background())
	}
	eng.mu.Lock()
	after := eng.versions
	eng.mu.Unlock()
	if after != before {
		t.Errorf("a settled, unchanged run was polled %d more times", after-before)
	}
}

// testSession is a client session that only has an id.
type testSession struct{}

func (testSession) SessionID() string { return "test" }
func (testSession) NotificationChannel() chan<- mcpgo.JSONRPCNotification {
	return make(chan mcpgo.JSONRPCNotification, 10)
}
func (testSession) Initialize()       {}
func (testSession) Initialized() bool { return true }
