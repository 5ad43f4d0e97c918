package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cairnhq/cairn/mcp/mcptest"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/workspace"
)

// toolbox calls tools and checks every answer against its output schema.
type toolbox struct {
	t       *testing.T
	s       *server
	schemas map[string]*jsonschema.Schema
	called  map[string]bool
}

// serveTools starts serve in a fresh workspace, as clientName, with a
// toolbox over it.
func serveTools(t *testing.T, clientName string) (*env, *server, *toolbox) {
	t.Helper()
	e := newEnv(t)
	s := e.serve(clientName)
	return e, s, newToolbox(t, s)
}

func newToolbox(t *testing.T, s *server) *toolbox {
	t.Helper()
	tools, err := s.client.ListTools(ctx(t))
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	tb := &toolbox{t: t, s: s, schemas: map[string]*jsonschema.Schema{}, called: map[string]bool{}}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
		if tl.Description == "" || len(tl.InputSchema) == 0 || len(tl.OutputSchema) == 0 || len(tl.Annotations) < 4 {
			t.Errorf("tool %s lacks a description, a schema or hints", tl.Name)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tl.OutputSchema))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("mem://"+tl.Name, doc); err != nil {
			t.Fatal(err)
		}
		if tb.schemas[tl.Name], err = c.Compile("mem://" + tl.Name); err != nil {
			t.Fatalf("%s: output schema: %v", tl.Name, err)
		}
	}
	slices.Sort(names)
	want := slices.Clone(mcptest.CairnTools)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	return tb
}

// ok calls a tool that must succeed and decodes its structured content.
func (tb *toolbox) ok(name string, args any, out any) {
	tb.t.Helper()
	r, _, err := tb.s.client.CallTool(ctx(tb.t), name, args, nil)
	if err != nil {
		tb.t.Fatalf("%s: %v", name, err)
	}
	if r.IsError {
		tb.t.Fatalf("%s(%v): %s", name, args, r.Text())
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.StructuredContent))
	if err != nil {
		tb.t.Fatal(err)
	}
	if err := tb.schemas[name].Validate(v); err != nil {
		tb.t.Errorf("%s: answer does not match the output schema: %v\n%s", name, err, r.StructuredContent)
	}
	tb.called[name] = true
	if out != nil {
		if err := json.Unmarshal(r.StructuredContent, out); err != nil {
			tb.t.Fatal(err)
		}
	}
}

// launchWaiting launches target with its default input and waits up to
// 30 s for the run to end or park.
func (tb *toolbox) launchWaiting(target string) run {
	tb.t.Helper()
	var r run
	tb.ok("launch_run", map[string]any{"target": target, "wait_seconds": 30}, &r)
	return r
}

// fails calls a tool that must fail with isError.
func (tb *toolbox) fails(name string, args any) string {
	tb.t.Helper()
	r, _, err := tb.s.client.CallTool(ctx(tb.t), name, args, nil)
	if err != nil {
		tb.t.Fatalf("%s: %v", name, err)
	}
	if !r.IsError {
		tb.t.Fatalf("%s(%v) succeeded, want isError: %s", name, args, r.StructuredContent)
	}
	return r.Text()
}

type run struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Result   any    `json:"result"`
	Question *struct {
		Choices []string `json:"choices"`
	} `json:"question"`
}

// TestEveryTool runs the binary and calls every tool at least once.
func TestEveryTool(t *testing.T) {
	t.Parallel()
	_, _, tb := serveTools(t, "go e2e")

	var targets struct {
		Targets []struct{ Name string } `json:"targets"`
	}
	tb.ok("list_targets", nil, &targets)
	if len(targets.Targets) != workflowCount(t) {
		t.Errorf("list_targets: %+v", targets)
	}
	var r run
	tb.ok("launch_run", map[string]any{"target": "hello", "input": map[string]any{"who": "go"}, "wait_seconds": 30}, &r)
	if r.Status != "succeeded" || r.Result != "hello go" {
		t.Fatalf("launch_run: %+v", r)
	}
	tb.ok("get_run", map[string]any{"run_id": r.ID}, nil)
	var page struct {
		Runs []run `json:"runs"`
	}
	tb.ok("list_runs", map[string]any{"target": "hello"}, &page)
	if len(page.Runs) != 1 {
		t.Errorf("list_runs: %+v", page)
	}
	var out struct {
		Records    []map[string]any `json:"records"`
		NextCursor string           `json:"next_cursor"`
		Done       bool             `json:"done"`
	}
	tb.ok("read_run_output", map[string]any{"run_id": r.ID, "limit": 1}, &out)
	if len(out.Records) != 1 || out.Records[0]["type"] != "start" || out.Done {
		t.Errorf("read_run_output first page: %+v", out)
	}
	tb.ok("read_run_output", map[string]any{"run_id": r.ID, "cursor": out.NextCursor, "limit": 1000}, &out)
	if !out.Done || out.Records[len(out.Records)-1]["type"] != "end" {
		t.Errorf("read_run_output rest: %+v", out)
	}

	parked := tb.launchWaiting("confirm")
	if parked.Status != "waiting" || parked.Question == nil {
		t.Fatalf("confirm: %+v", parked)
	}
	tb.ok("answer_run", map[string]any{"run_id": parked.ID, "answer": "yes"}, nil)
	var slow run
	tb.ok("launch_run", map[string]any{"target": "slow"}, &slow)
	tb.ok("cancel_run", map[string]any{"run_id": slow.ID}, nil)
	until(t, "the slow run to be cancelled", func() bool {
		var got run
		tb.ok("get_run", map[string]any{"run_id": slow.ID}, &got)
		return got.Status == "cancelled"
	})

	var created struct {
		Automation struct {
			ID    string `json:"id"`
			Owner string `json:"owner"`
		} `json:"automation"`
		Created bool `json:"created"`
	}
	tb.ok("create_automation", map[string]any{"key": "nightly", "target": "noop", "cron": "0 3 * * *", "tz": "UTC"}, &created)
	if !created.Created || created.Automation.Owner != "agent:go-e2e" {
		t.Errorf("create_automation: %+v", created)
	}
	var list struct {
		Automations []map[string]any `json:"automations"`
	}
	tb.ok("list_automations", nil, &list)
	if len(list.Automations) != 1 {
		t.Errorf("list_automations: %+v", list)
	}
	tb.ok("update_automation", map[string]any{"id": created.Automation.ID, "note": "tested", "every": "6h"}, nil)
	var fire struct {
		Outcome string `json:"outcome"`
		RunID   string `json:"run_id"`
	}
	tb.ok("trigger_automation", map[string]any{"id": created.Automation.ID}, &fire)
	if fire.Outcome != "queued" || fire.RunID == "" {
		t.Errorf("trigger_automation: %+v", fire)
	}
	until(t, "the fired run to succeed", func() bool {
		var got run
		tb.ok("get_run", map[string]any{"run_id": fire.RunID}, &got)
		return got.Status == "succeeded"
	})
	tb.ok("delete_automation", map[string]any{"id": created.Automation.ID}, nil)

	tb.ok("create_session", map[string]any{"session_id": "chat", "title": "Go e2e"}, nil)
	var msgs []any
	for i := range 5 {
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("turn %d", i)})
	}
	tb.ok("append_session_messages", map[string]any{"session_id": "chat", "messages": msgs}, nil)
	tb.ok("get_session", map[string]any{"session_id": "chat"}, nil)
	tb.ok("list_sessions", nil, nil)
	var comp struct {
		Compacted  int    `json:"compacted"`
		MemoryFile string `json:"memory_file"`
	}
	tb.ok("compact_session", map[string]any{"session_id": "chat", "summary": "five turns", "keep_last": 1}, &comp)
	if comp.Compacted != 4 || comp.MemoryFile == "" {
		t.Errorf("compact_session: %+v", comp)
	}
	if b, err := os.ReadFile(comp.MemoryFile); err != nil || string(b) != "five turns" && !strings.Contains(string(b), "five turns") {
		t.Errorf("memory file: %q %v", b, err)
	}
	tb.ok("delete_session", map[string]any{"session_id": "chat"}, nil)

	for _, name := range mcptest.CairnTools {
		if !tb.called[name] {
			t.Errorf("%s was not called", name)
		}
	}
}

// snapshot is what the store holds, to check that bad input wrote nothing.
func snapshot(t *testing.T, e *env) string {
	t.Helper()
	ws, err := workspace.Resolve(e.root, "", e.state)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), ws.DBPath(), sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := st.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	list, _, err := st.ListRuns(context.Background(), store.RunFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range list {
		ids = append(ids, fmt.Sprintf("%s@%d", r.ID, r.Revision))
	}
	return fmt.Sprintf("%+v %v", c, ids)
}

// TestBadInput sends malformed and hostile input over stdio: each gets an
// error, the server answers the next request, and the store is unchanged.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e, s, tb := serveTools(t, "bad input")
	r := tb.launchWaiting("noop") // some state to keep
	before := snapshot(t, e)

	ping := func(what string) {
		t.Helper()
		if m, err := s.client.Call(ctx(t), "ping", nil); err != nil || m.Error != nil {
			t.Fatalf("after %s the server does not answer: %v %s\nstderr: %s", what, err, m.Raw, s.stderr.String())
		}
	}
	raw := []struct{ name, line string }{
		{"invalid JSON", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{`},
		{"binary junk", "\x00\x01\x02garbage"},
		{"a JSON array", `[{"jsonrpc":"2.0","id":8,"method":"ping"}]`},
		{"10 MB argument", `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"create_session","arguments":{"session_id":"huge","title":"` + strings.Repeat("t", 10<<20) + `"}}}`},
		{"10 MB message content", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"append_session_messages","arguments":{"session_id":"x","messages":[{"role":"user","content":"` + strings.Repeat("c", 10<<20) + `"}]}},"id":"big2"}`},
	}
	for _, c := range raw {
		from := len(s.client.Messages())
		if err := s.client.SendRaw([]byte(c.line)); err != nil {
			t.Fatal(err)
		}
		m, err := s.client.WaitFor(ctx(t), func(m mcptest.Message) bool { return m.Index >= from && m.Error != nil })
		if err != nil {
			t.Fatalf("%s: no error: %v", c.name, err)
		}
		if strings.HasPrefix(c.name, "10 MB") && (!strings.Contains(m.Error.Message, "limit") || string(m.ID) == "null") {
			t.Errorf("%s: error %s should carry the request id and name the limit", c.name, m.Raw)
		}
		ping(c.name)
	}
	if m, _ := s.client.Call(ctx(t), "tools/destroy", nil); m.Error == nil {
		t.Errorf("unknown method: %s", m.Raw)
	}
	ping("an unknown method")
	if _, _, err := s.client.CallTool(ctx(t), "rm_rf", map[string]any{}, nil); err == nil {
		t.Errorf("unknown tool: no error")
	}
	ping("an unknown tool")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"launch_run", map[string]any{"target": 42}},
		{"launch_run", map[string]any{"target": "hello", "input": []int{1}}},
		{"launch_run", map[string]any{"target": "hello", "wait_seconds": "soon"}},
		{"launch_run", map[string]any{"target": "../../bin/sh"}},
		{"launch_run", map[string]any{"target": "hello", "input": map[string]any{"who": 12}}},
		{"get_run", map[string]any{"run_id": "run_\u0000x"}},
		{"get_run", map[string]any{"run_id": strings.Repeat("r", 1024)}},
		{"read_run_output", map[string]any{"run_id": "../" + r.ID}},
		{"answer_run", map[string]any{"run_id": r.ID, "answer": "late"}},
		{"cancel_run", map[string]any{"run_id": r.ID}},
		{"create_session", map[string]any{"session_id": "../escape"}},
		{"create_session", map[string]any{"session_id": "a/b"}},
		{"append_session_messages", map[string]any{"session_id": "missing", "messages": []any{map[string]any{"role": "user", "content": "x"}}}},
		{"append_session_messages", map[string]any{"session_id": "x", "messages": "many"}},
		{"compact_session", map[string]any{"session_id": "missing", "summary": "s"}},
		{"delete_session", map[string]any{"session_id": "missing"}},
		{"create_automation", map[string]any{"key": "k", "target": "noop", "cron": "0 0 30 2 *"}},
		{"create_automation", map[string]any{"key": "k", "target": "noop", "cron": "* * * * *", "tz": "Mars/Olympus"}},
		{"create_automation", map[string]any{"key": "k", "target": "noop", "files": []string{"../../etc/*"}}},
		{"create_automation", map[string]any{"key": "k", "target": "noop", "url": "http://user:pw@example.com/"}},
		{"create_automation", map[string]any{"key": "k", "target": "nope", "every": "1m"}},
		{"update_automation", map[string]any{"id": "aut_missing", "enabled": false}},
		{"delete_automation", map[string]any{"id": "../aut"}},
		{"trigger_automation", map[string]any{"id": "aut_missing"}},
	} {
		msg := tb.fails(c.tool, c.args)
		if msg == "" {
			t.Errorf("%s(%v): empty error message", c.tool, c.args)
		}
	}
	ping("bad arguments")
	if after := snapshot(t, e); after != before {
		t.Errorf("bad input changed the store:\nbefore %s\nafter  %s", before, after)
	}
}

// TestProgressOrder launches runs concurrently with progress tokens and
// checks in the raw stream that every progress notification precedes its
// call's response.
func TestProgressOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.serve("progress")
	const calls = 8
	var wg sync.WaitGroup
	respIdx := make([]int, calls)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, m, err := s.client.CallTool(ctx(t), "launch_run", map[string]any{"target": "hello", "wait_seconds": 30},
				map[string]any{"progressToken": fmt.Sprintf("t%d", i)})
			if err != nil || r.IsError {
				t.Errorf("launch %d: %v %v", i, err, r)
				return
			}
			respIdx[i] = m.Index
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for _, m := range s.client.Messages() {
		if m.Method != "notifications/progress" {
			continue
		}
		var p struct {
			Token string `json:"progressToken"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			t.Fatal(err)
		}
		var i int
		if _, err := fmt.Sscanf(p.Token, "t%d", &i); err != nil {
			t.Fatalf("unknown token %q", p.Token)
		}
		seen[p.Token]++
		if m.Index > respIdx[i] {
			t.Errorf("progress for %s at %d after its response at %d", p.Token, m.Index, respIdx[i])
		}
	}
	if len(seen) != calls {
		t.Errorf("progress for %d of %d calls", len(seen), calls)
	}
}

// TestHandOffToWorker closes serve's stdin while a run sleeps mid-way: serve
// hands the run to a background worker and exits, and the worker finishes
// it, each step once.
func TestHandOffToWorker(t *testing.T) {
	t.Parallel()
	e, s, tb := serveTools(t, "handoff")
	var r run
	tb.ok("launch_run", map[string]any{"target": "handoff"}, &r)
	// Wait until the durable sleep started.
	cursor := ""
	for started := false; !started; {
		var out struct {
			Records    []map[string]any `json:"records"`
			NextCursor string           `json:"next_cursor"`
		}
		tb.ok("read_run_output", map[string]any{"run_id": r.ID, "cursor": cursor, "wait_seconds": 10}, &out)
		cursor = out.NextCursor
		for _, rec := range out.Records {
			if rec["type"] == "step" && rec["step"] == "nap" && rec["event"] == "started" {
				started = true
			}
		}
	}
	servePID := s.cmd.Process.Pid
	s.stdin.Close()
	if err := <-s.done; err != nil {
		t.Fatalf("serve exited with %v; stderr:\n%s", err, s.stderr.String())
	}
	s.done <- nil

	ws, err := workspace.Resolve(e.root, "", e.state)
	if err != nil {
		t.Fatal(err)
	}
	until(t, "the worker to finish the run", func() bool {
		st, err := sqlite.Open(context.Background(), ws.DBPath(), sqlite.Options{ReadOnly: true})
		if err != nil {
			return false
		}
		defer st.Close()
		got, err := st.GetRun(context.Background(), r.ID)
		return err == nil && got.Status.Settled()
	})
	out, err := e.command("--json", "runs", "show", r.ID)
	if err != nil {
		t.Fatalf("runs show: %v\n%s", err, out)
	}
	if !strings.Contains(out, `"succeeded"`) {
		t.Fatalf("the handed-off run did not succeed:\n%s", out)
	}
	marks, err := os.ReadFile(filepath.Join(e.root, "marks.txt"))
	if err != nil || string(marks) != "first\nsecond\n" {
		t.Errorf("marks.txt = %q (%v), want each step once", marks, err)
	}
	journal, err := os.ReadFile(filepath.Join(ws.OutputDir(), r.ID+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var finisher int
	for _, line := range bytes.Split(bytes.TrimSpace(journal), []byte("\n")) {
		var rec struct {
			Type string `json:"type"`
			Text string `json:"text"`
			PID  int    `json:"pid"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Type == "note" && strings.Contains(rec.Text, "resumed by pid") {
			fmt.Sscanf(rec.Text[strings.Index(rec.Text, "resumed by pid"):], "resumed by pid %d", &finisher)
		}
	}
	if finisher == 0 || finisher == servePID {
		t.Errorf("the run was not resumed by another process (resumed by %d, serve was %d):\n%s", finisher, servePID, journal)
	}
	if log, err := os.ReadFile(ws.LogPath()); err == nil && t.Failed() {
		t.Logf("worker.log:\n%s", log)
	}
}

// TestSubscriptionSeesOtherProcess subscribes to a parked run and answers
// it from another mcp-host process.
func TestSubscriptionSeesOtherProcess(t *testing.T) {
	t.Parallel()
	e, s, tb := serveTools(t, "subscriber")
	r := tb.launchWaiting("confirm")
	if r.Status != "waiting" {
		t.Fatalf("confirm: %+v", r)
	}
	for _, uri := range []string{"cairn://runs/" + r.ID, "cairn://runs/" + r.ID + "/output"} {
		if m, err := s.client.Call(ctx(t), "resources/subscribe", map[string]any{"uri": uri}); err != nil || m.Error != nil {
			t.Fatalf("subscribe %s: %v %s", uri, err, m.Raw)
		}
	}
	if out, err := e.command("answer", r.ID, "yes"); err != nil {
		t.Fatalf("mcp-host answer: %v\n%s", err, out)
	}
	for _, uri := range []string{"cairn://runs/" + r.ID, "cairn://runs/" + r.ID + "/output"} {
		if _, err := s.client.WaitFor(ctx(t), func(m mcptest.Message) bool {
			return m.Method == "notifications/resources/updated" && bytes.Contains(m.Params, []byte(`"`+uri+`"`))
		}); err != nil {
			t.Fatalf("no update for %s: %v", uri, err)
		}
	}
}

// TestStdoutIsProtocolOnly checks every line serve wrote to stdout is a
// JSON-RPC message, after a session that ran steps printing to stdout.
func TestStdoutIsProtocolOnly(t *testing.T) {
	t.Parallel()
	_, s, tb := serveTools(t, "stdout")
	tb.ok("launch_run", map[string]any{"target": "hello", "wait_seconds": 30}, nil)
	for _, m := range s.client.Messages() {
		if m.Method == "<unparsable>" {
			t.Errorf("a non-protocol line on stdout: %q", m.Raw)
		}
	}
}

// TestLongPollsDoNotBlock keeps 40 read_run_output long polls waiting on
// a parked run, checks that quick calls are answered meanwhile, then
// answers the run, which ends every poll.
func TestLongPollsDoNotBlock(t *testing.T) {
	t.Parallel()
	_, s, tb := serveTools(t, "long polls")
	r := tb.launchWaiting("confirm")
	var out struct {
		NextCursor string `json:"next_cursor"`
	}
	tb.ok("read_run_output", map[string]any{"run_id": r.ID, "limit": 1000}, &out)
	var polls []<-chan mcptest.Message
	for range 40 {
		_, ch, err := s.client.Request("tools/call", map[string]any{"name": "read_run_output",
			"arguments": map[string]any{"run_id": r.ID, "cursor": out.NextCursor, "wait_seconds": 60}})
		if err != nil {
			t.Fatal(err)
		}
		polls = append(polls, ch)
	}
	for range 5 {
		tb.ok("list_targets", nil, nil)
		tb.ok("get_run", map[string]any{"run_id": r.ID}, nil)
	}
	answered := 0
	for _, ch := range polls {
		select {
		case <-ch:
			answered++
		default:
		}
	}
	if answered == len(polls) {
		t.Fatalf("every long poll answered before the run changed: they did not wait")
	}
	tb.ok("answer_run", map[string]any{"run_id": r.ID, "answer": "yes"}, nil)
	for i, ch := range polls {
		m, err := mcptest.Await(ctx(t), ch)
		if err != nil || m.Error != nil {
			t.Fatalf("poll %d: %v %s", i, err, m.Raw)
		}
		if !bytes.Contains(m.Result, []byte(`answer`)) {
			t.Errorf("poll %d ended without the new records: %s", i, m.Result)
		}
	}
}

// TestRunLogSeesOtherProcess: a client that set logging/setLevel info is
// told of a run another process (the CLI) launched and executed: the run
// log is fed by the store's change feed, not only by this serve's engine.
func TestRunLogSeesOtherProcess(t *testing.T) {
	t.Parallel()
	e, s, _ := serveTools(t, "log reader")
	if m, err := s.client.Call(ctx(t), "logging/setLevel", map[string]any{"level": "info"}); err != nil || m.Error != nil {
		t.Fatalf("logging/setLevel: %v %s", err, m.Raw)
	}
	if out, err := e.command("run", "hello"); err != nil {
		t.Fatalf("mcp-host run hello: %v\n%s", err, out)
	}
	if _, err := s.client.WaitFor(ctx(t), func(m mcptest.Message) bool {
		return m.Method == "notifications/message" && bytes.Contains(m.Params, []byte(`"cairn.runs"`)) &&
			bytes.Contains(m.Params, []byte(`"target":"hello"`)) && bytes.Contains(m.Params, []byte(`"status":"succeeded"`))
	}); err != nil {
		t.Fatalf("no run log message for the CLI's run: %v", err)
	}
}
