package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/mcp/mcptest"
)

// sendRaw sends a line and returns the first error response after it.
func sendRaw(t *testing.T, f *fixture, line string) mcptest.Message {
	t.Helper()
	from := len(f.client.Messages())
	if err := f.client.SendRaw([]byte(line)); err != nil {
		t.Fatal(err)
	}
	m, err := f.client.WaitFor(f.ctx(), func(m mcptest.Message) bool { return m.Index >= from && (m.Error != nil || m.Method == "<unparsable>") })
	if err != nil {
		t.Fatalf("%s: no answer: %v", line, err)
	}
	return m
}

// TestJSONRPCRules checks the codes and id rules of JSON-RPC as MCP
// narrows them: every malformed request gets the right error.
func TestJSONRPCRules(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	cases := []struct {
		name, line string
		code       int
		id         string
		text       string
	}{
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, -32600, "null", "id must be"},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, "null", "integer"},
		{"method not a string", `{"jsonrpc":"2.0","id":7,"method":5}`, -32600, "7", "method must be a string"},
		{"array params", `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":[1]}`, -32602, "8", "params must be"},
		{"batch at 2025-11-25", `[{"jsonrpc":"2.0","id":9,"method":"ping"}]`, -32600, "null", "2025-03-26"},
		{"subscribe to a foreign uri", `{"jsonrpc":"2.0","id":10,"method":"resources/subscribe","params":{"uri":"file:///etc/passwd"}}`, -32002, "10", "unknown resource"},
		{"subscribe to a missing run", `{"jsonrpc":"2.0","id":11,"method":"resources/subscribe","params":{"uri":"cairn://runs/run_missing"}}`, -32002, "11", "run_missing"},
	}
	for _, c := range cases {
		m := sendRaw(t, f, c.line)
		if m.Error == nil || m.Error.Code != c.code || string(m.ID) != c.id || !strings.Contains(m.Error.Message, c.text) {
			t.Errorf("%s: got %s, want code %d, id %s, text with %q", c.name, m.Raw, c.code, c.id, c.text)
		}
	}
}

// TestModernProtocolRefused checks that 2026-07-28 is not offered: a
// request declaring it gets UNSUPPORTED_PROTOCOL_VERSION with the
// versions served, initialize negotiates down, server/discover lists only
// what is served, and subscriptions/listen is refused.
func TestModernProtocolRefused(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{noInit: true})
	m, err := f.client.InitializeVersion(f.ctx(), "future client", "2026-07-28")
	if err != nil {
		t.Fatal(err)
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(m.Result, &init); err != nil || init.ProtocolVersion != "2025-11-25" {
		t.Errorf("initialize at 2026-07-28: %s, want 2025-11-25", m.Raw)
	}
	meta := map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
	for _, method := range []string{"server/discover", "subscriptions/listen", "tools/list"} {
		m, err := f.client.Call(f.ctx(), method, meta)
		if err != nil {
			t.Fatal(err)
		}
		if m.Error == nil || m.Error.Code != -32022 {
			t.Errorf("%s at 2026-07-28: %s, want error -32022", method, m.Raw)
			continue
		}
		var data struct{ Supported []string }
		if err := json.Unmarshal(m.Error.Data, &data); err != nil || len(data.Supported) == 0 || strings.Contains(strings.Join(data.Supported, " "), "2026") {
			t.Errorf("%s: supported %s, want the versions served, without 2026-07-28", method, m.Error.Data)
		}
	}
	m, err = f.client.Call(f.ctx(), "subscriptions/listen", map[string]any{})
	if err != nil || m.Error == nil {
		t.Errorf("subscriptions/listen at 2025-11-25: %s, want an error", m.Raw)
	}
	m, err = f.client.Call(f.ctx(), "server/discover", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Error == nil && strings.Contains(string(m.Result), "2026-07-28") {
		t.Errorf("server/discover offers 2026-07-28: %s", m.Raw)
	}
}

// TestBatches checks batches at 2025-03-26: answered as one array, with
// notifications unanswered and initialize refused inside.
func TestBatches(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{version: "2025-03-26"})
	from := len(f.client.Messages())
	batch := `[{"jsonrpc":"2.0","id":"a","method":"ping"},` +
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}},` +
		`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"list_targets","arguments":{}}},` +
		`{"jsonrpc":"2.0","id":"c","method":"initialize","params":{}}]`
	if err := f.client.SendRaw([]byte(batch)); err != nil {
		t.Fatal(err)
	}
	m, err := f.client.WaitFor(f.ctx(), func(m mcptest.Message) bool { return m.Index >= from && m.Method == "<unparsable>" })
	if err != nil {
		t.Fatal(err)
	}
	var answers []mcptest.Message
	if err := json.Unmarshal(m.Raw, &answers); err != nil {
		t.Fatalf("batch answer %s: %v", m.Raw, err)
	}
	byID := map[string]mcptest.Message{}
	for _, a := range answers {
		byID[string(a.ID)] = a
	}
	if len(answers) != 3 || byID[`"a"`].Result == nil || byID[`"b"`].Result == nil || byID[`"c"`].Error == nil {
		t.Errorf("batch answers %s: want results for a and b, an error for c", m.Raw)
	}
	if e := byID[`"c"`].Error; e != nil && !strings.Contains(e.Message, "batch") {
		t.Errorf("initialize in a batch: %q should say why", e.Message)
	}
	if m := sendRaw(t, f, `[]`); m.Error == nil || m.Error.Code != -32600 {
		t.Errorf("empty batch: %s", m.Raw)
	}
}

// TestCancelledGetsNoAnswer cancels a long wait and a piece of work with
// notifications/cancelled: neither is answered, other calls are.
func TestCancelledGetsNoAnswer(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	var ids []string
	for _, tool := range []string{"test_block", "test_work"} {
		id, _, err := f.client.Request("tools/call", map[string]any{"name": tool, "arguments": map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		<-f.blocked
		if err := f.client.Notify("notifications/cancelled", map[string]any{"requestId": json.RawMessage(id), "reason": "test"}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, string(id))
	}
	f.ok("list_targets", nil, nil)
	// Closing stdin makes ServeStdio finish every request and flush
	// every answer before it returns: then nothing more can come.
	f.stdin.Close()
	err := <-f.served
	f.served <- err
	if err := f.client.Wait(context.Background()); err != nil && !strings.Contains(err.Error(), "EOF") {
		t.Logf("client: %v", err)
	}
	for _, m := range f.client.Messages() {
		for _, id := range ids {
			if string(m.ID) == id && m.Method == "" {
				t.Errorf("cancelled request %s was answered: %s", id, m.Raw)
			}
		}
	}
}

// TestArgumentErrors checks that argument errors name the argument and
// say what is expected.
func TestArgumentErrors(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"create_automation", map[string]any{"target": "noop", "every": "1m"}, `argument "key" is required`},
		{"create_automation", map[string]any{"key": "k", "target": "noop", "every": 5}, `"every" must be a string such as "30m", got a number`},
		{"launch_run", map[string]any{"target": "noop", "bogus": 1}, `unknown argument "bogus"`},
		{"get_run", map[string]any{"run_id": strings.Repeat("a", 129)}, `"run_id" is 129 characters long; at most 128 are allowed`},
		{"launch_run", map[string]any{"target": "noop", "wait_seconds": 61}, `"wait_seconds" must be at most 60, got 61`},
		{"list_runs", map[string]any{"status": "sleeping"}, `"status" must be one of`},
		{"append_session_messages", map[string]any{"session_id": "s", "messages": []any{map[string]any{"content": "hi"}}}, `"messages[0]" needs "messages[0].role"`},
	}
	for _, c := range cases {
		msg := f.fails(c.tool, c.args)
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s(%v): %q, want it to contain %q", c.tool, c.args, msg, c.want)
		}
		if strings.Contains(msg, "&{") {
			t.Errorf("%s: %q is a Go struct dump", c.tool, msg)
		}
	}
}
