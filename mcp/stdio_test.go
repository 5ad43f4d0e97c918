package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/mcp/mcptest"
	"github.com/cairnhq/cairn/mcp/transport"
)

// progressOf returns the progress token of a progress notification.
func progressOf(m mcptest.Message) (string, bool) {
	if m.Method != "notifications/progress" {
		return "", false
	}
	var p struct {
		Token json.RawMessage `json:"progressToken"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return "", false
	}
	return string(p.Token), true
}

// TestProgressNeverAfterResponse sends many concurrent calls that each
// emit many progress notifications, through our ordered path and through
// mcp-go's notification channel, and checks in the raw output stream that
// no progress notification of a call comes after that call's response.
func TestProgressNeverAfterResponse(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"test_progress", "test_progress_channel"} {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			f := setup(t, fixtureOpts{patientSync: true})
			// mcp-go's channel path drops a notification when the session's
			// channel (1024) is full: keep its total below that.
			calls, perCall := 16, 300
			if tool == "test_progress_channel" {
				calls, perCall = 4, 250
			}
			var wg sync.WaitGroup
			ids := make([]string, calls)
			for i := range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					token := fmt.Sprintf("tok-%d", i)
					r, m, err := f.client.CallTool(f.ctx(), tool, map[string]any{"n": perCall}, map[string]any{"progressToken": token})
					if err != nil || r.IsError {
						t.Errorf("call %d: %v %v", i, err, r)
						return
					}
					ids[i] = string(m.ID)
				}()
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			msgs := f.client.Messages()
			responseAt := map[string]int{} // token -> index of its call's response
			for i := range calls {
				for _, m := range msgs {
					if string(m.ID) == ids[i] && m.Method == "" {
						responseAt[fmt.Sprintf("%q", fmt.Sprintf("tok-%d", i))] = m.Index
					}
				}
			}
			count := map[string]int{}
			for _, m := range msgs {
				tok, ok := progressOf(m)
				if !ok {
					continue
				}
				count[tok]++
				at, ok := responseAt[tok]
				if !ok {
					t.Fatalf("progress for unknown token %s", tok)
				}
				if m.Index > at {
					t.Fatalf("progress %s at message %d came after its response at %d", m.Raw, m.Index, at)
				}
			}
			for tok := range responseAt {
				if count[tok] != perCall {
					t.Errorf("token %s: %d progress notifications, want %d", tok, count[tok], perCall)
				}
			}
			// Between a call's last progress notification and its
			// response the server sent a ping (see syncClient).
			last := map[string]int{}
			for _, m := range msgs {
				if tok, ok := progressOf(m); ok {
					last[tok] = m.Index
				}
			}
			for tok, at := range responseAt {
				synced := false
				for _, m := range msgs[last[tok]+1 : at] {
					if m.Method == "ping" && len(m.ID) > 0 {
						synced = true
						break
					}
				}
				if !synced {
					t.Errorf("token %s: no ping between its last progress (%d) and its response (%d)", tok, last[tok], at)
				}
			}
		})
	}
}

// TestQuickCallNotBlockedByLongPolls keeps 40 calls blocked in their
// handlers and checks that a quick call is answered meanwhile.
func TestQuickCallNotBlockedByLongPolls(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	const long = 40
	var pending []<-chan mcptest.Message
	for range long {
		_, ch, err := f.client.Request("tools/call", map[string]any{"name": "test_block", "arguments": map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, ch)
	}
	for range long {
		select {
		case <-f.blocked:
		case <-f.ctx().Done():
			t.Fatal("the blocking calls did not all start")
		}
	}
	var targets targetList
	f.ok("list_targets", nil, &targets)
	if len(targets.Targets) == 0 {
		t.Fatal("list_targets returned nothing")
	}
	for _, ch := range pending {
		select {
		case m := <-ch:
			t.Fatalf("a blocked call answered before release: %s", m.Raw)
		default:
		}
	}
	close(f.release)
	for _, ch := range pending {
		m, err := mcptest.Await(f.ctx(), ch)
		if err != nil || m.Error != nil {
			t.Fatalf("blocked call: %v %v", err, m.Error)
		}
	}
}

// TestBusyRefusal checks that requests over the in-flight bound get an
// error instead of stalling the connection, and that it recovers.
func TestBusyRefusal(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{maxInFlight: 3})
	var pending []<-chan mcptest.Message
	for range 3 {
		_, ch, err := f.client.Request("tools/call", map[string]any{"name": "test_block", "arguments": map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, ch)
		<-f.blocked
	}
	m, err := f.client.Call(f.ctx(), "ping", nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Error == nil || !strings.Contains(m.Error.Message, "busy") {
		t.Fatalf("ping over the bound: %s, want a busy error", m.Raw)
	}
	close(f.release)
	for _, ch := range pending {
		if _, err := mcptest.Await(f.ctx(), ch); err != nil {
			t.Fatal(err)
		}
	}
	if m, err := f.client.Call(f.ctx(), "ping", nil); err != nil || m.Error != nil {
		t.Fatalf("ping after release: %v %s", err, m.Raw)
	}
}

func TestPanicIsToolError(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	msg := f.fails("test_panic", map[string]any{})
	if !strings.Contains(msg, "boom") || !strings.Contains(msg, "test_panic") {
		t.Errorf("panic message %q should name the tool and the panic", msg)
	}
	f.ok("list_targets", nil, nil)
}

// TestBadInput sends malformed and hostile messages. Each gets an error,
// the server goes on serving, and nothing is written.
func TestBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	before := f.state()
	huge := strings.Repeat("x", 10<<20)

	raw := []struct {
		name string
		line string
		code int
	}{
		{"invalid JSON", `{"jsonrpc":"2.0","id":1,"method":`, -32700},
		{"not an object", `[1,2,3]`, -32600},
		{"no method", `{"jsonrpc":"2.0"}`, -32600},
		{"10 MB argument", `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"launch_run","arguments":{"target":"noop","input":{"x":"` + huge + `"}}}}`, -32600},
	}
	for _, c := range raw {
		from := len(f.client.Messages())
		if err := f.client.SendRaw([]byte(c.line)); err != nil {
			t.Fatal(err)
		}
		m, err := f.client.WaitFor(f.ctx(), func(m mcptest.Message) bool { return m.Index >= from && m.Error != nil })
		if err != nil {
			t.Fatalf("%s: no error response: %v", c.name, err)
		}
		if m.Error.Code != c.code {
			t.Errorf("%s: error %d %q, want code %d", c.name, m.Error.Code, m.Error.Message, c.code)
		}
		if c.name == "10 MB argument" {
			if string(m.ID) != `"big"` {
				t.Errorf("10 MB argument: error has id %s, want \"big\"", m.ID)
			}
			if !strings.Contains(m.Error.Message, "limit") {
				t.Errorf("10 MB argument: message %q should name the limit", m.Error.Message)
			}
		}
		if m, err := f.client.Call(f.ctx(), "ping", nil); err != nil || m.Error != nil {
			t.Fatalf("%s: ping afterwards: %v %s", c.name, err, m.Raw)
		}
	}

	// Protocol faults: JSON-RPC errors.
	if m, _ := f.client.Call(f.ctx(), "no/such/method", nil); m.Error == nil {
		t.Errorf("unknown method: %s, want an error", m.Raw)
	}
	if _, _, err := f.client.CallTool(f.ctx(), "no_such_tool", map[string]any{}, nil); err == nil {
		t.Errorf("unknown tool: no error")
	}
	if m, _ := f.client.Call(f.ctx(), "resources/subscribe", map[string]any{"uri": "cairn://runs/../../etc/passwd"}); m.Error == nil {
		t.Errorf("subscribe to a hostile uri: %s, want an error", m.Raw)
	}
	if m, _ := f.client.Call(f.ctx(), "resources/read", map[string]any{"uri": "cairn://runs/nope%00"}); m.Error == nil {
		t.Errorf("read a hostile uri: %s, want an error", m.Raw)
	}

	// Domain and argument failures: isError results.
	bad := []struct {
		tool string
		args any
		want string
	}{
		{"get_run", map[string]any{"run_id": 42}, "run_id"},
		{"get_run", map[string]any{"run_id": "../x"}, "run id"},
		{"get_run", map[string]any{"run_id": "a\x00b"}, "run id"},
		{"get_run", map[string]any{"run_id": strings.Repeat("a", 1024)}, "run_id"},
		{"get_run", map[string]any{}, "run_id"},
		{"get_run", map[string]any{"run_id": "run_missing"}, "no run"},
		{"launch_run", map[string]any{"target": "nope"}, "no workflow"},
		{"launch_run", map[string]any{"target": "noop", "wait_seconds": 61}, "wait_seconds"},
		{"launch_run", map[string]any{"target": "noop", "input": "text"}, "input"},
		{"launch_run", map[string]any{"target": "noop", "extra": 1}, "extra"},
		{"read_run_output", map[string]any{"run_id": "run_missing", "wait_seconds": -1}, "wait_seconds"},
		{"list_runs", map[string]any{"limit": "ten"}, "limit"},
		{"list_runs", map[string]any{"status": "sleeping"}, "status"},
		{"answer_run", map[string]any{"run_id": "run_missing", "answer": "yes"}, "no run"},
		{"cancel_run", map[string]any{"run_id": "/etc/passwd"}, "run id"},
		{"create_session", map[string]any{"session_id": "a/b"}, "session id"},
		{"append_session_messages", map[string]any{"session_id": "s1", "messages": []any{}}, "messages"},
		{"append_session_messages", map[string]any{"session_id": "s1", "messages": []any{map[string]any{"role": "robot", "content": "hi"}}}, "role"},
		{"append_session_messages", map[string]any{"session_id": "nope", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}, "no session"},
		{"append_session_messages", map[string]any{"session_id": "nope", "messages": []any{map[string]any{"role": "user"}}}, "content"},
		{"compact_session", map[string]any{"session_id": "nope", "summary": ""}, "summary"},
		{"delete_session", map[string]any{"session_id": ".."}, "session id"},
		{"create_automation", map[string]any{"key": "k", "target": "noop"}, "trigger"},
		{"create_automation", map[string]any{"key": "k", "target": "noop", "cron": "* * * * *", "url": "http://x"}, "only one"},
		{"create_automation", map[string]any{"key": "k", "target": "noop", "every": "1m", "tz": "UTC"}, "tz"},
		{"create_automation", map[string]any{"key": "../k", "target": "noop", "every": "1m"}, "automation key"},
		{"create_automation", map[string]any{"key": "k", "target": "noop", "every": "1m", "owner": "a b"}, "owner"},
		{"update_automation", map[string]any{"id": "aut_missing", "enabled": "no"}, "enabled"},
		{"delete_automation", map[string]any{"id": "aut_missing"}, "no automation"},
		{"trigger_automation", map[string]any{"id": "x\ny"}, "automation id"},
	}
	for _, c := range bad {
		msg := f.fails(c.tool, c.args)
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s(%v): message %q should mention %q", c.tool, c.args, msg, c.want)
		}
	}
	if got := f.state(); got != before {
		t.Errorf("bad input changed state:\nbefore %s\nafter  %s", before, got)
	}
	f.ok("list_targets", nil, nil)
}

// TestServeEndsOnEOF closes stdin with a long wait and a piece of work in
// flight: the wait ends at once, the work runs to its end and answers,
// then ServeStdio returns.
func TestServeEndsOnEOF(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	_, wait, err := f.client.Request("tools/call", map[string]any{"name": "test_block", "arguments": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	<-f.blocked
	_, work, err := f.client.Request("tools/call", map[string]any{"name": "test_work", "arguments": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	<-f.blocked
	f.stdin.Close()
	m, err := mcptest.Await(f.ctx(), wait)
	if err != nil {
		t.Fatalf("the long wait got no answer: %v", err)
	}
	if !bytes.Contains(m.Raw, []byte("closed the connection")) {
		t.Errorf("long wait after EOF: %s, want an error saying the client went", m.Raw)
	}
	close(f.release)
	m, err = mcptest.Await(f.ctx(), work)
	if err != nil || m.Error != nil || !bytes.Contains(m.Result, []byte(`"n":2`)) {
		t.Fatalf("work in flight at EOF: %v %s, want its answer", err, m.Raw)
	}
	if err := <-f.served; err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	f.served <- nil
}

// TestShutdownGrace checks that work still running a grace period after
// EOF is cancelled, so that ServeStdio returns.
func TestShutdownGrace(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	f.srv.shutdownGrace = 50 * time.Millisecond
	_, work, err := f.client.Request("tools/call", map[string]any{"name": "test_work", "arguments": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	<-f.blocked
	f.stdin.Close()
	if err := <-f.served; err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	f.served <- nil
	m, err := mcptest.Await(f.ctx(), work)
	if err != nil || !bytes.Contains(m.Raw, []byte("isError")) {
		t.Fatalf("work cancelled after the grace: %v %s", err, m.Raw)
	}
}

// TestWriteAfterClientGone checks that a dead output does not hang the
// server: ServeStdio returns the write error once stdin ends.
func TestWriteError(t *testing.T) {
	t.Parallel()
	srv := New(Params{Runs: newFakeEngine(nil)})
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	err := srv.ServeStdio(context.Background(), in, failWriter{})
	if err == nil || !strings.Contains(err.Error(), "write stdout") {
		t.Fatalf("ServeStdio = %v, want a write error", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("broken pipe") }

// TestSyncWithoutPingAnswers checks that a client that never answers ping
// requests still gets its answers, and is pinged only once.
func TestSyncWithoutPingAnswers(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{ignorePings: true})
	for range transport.MaxMissedPings + 2 {
		r, _, err := f.client.CallTool(f.ctx(), "test_progress", map[string]any{"n": 2}, map[string]any{"progressToken": "x"})
		if err != nil || r.IsError {
			t.Fatalf("call: %v %v", err, r)
		}
	}
	pings := 0
	for _, m := range f.client.Messages() {
		if m.Method == "ping" {
			pings++
		}
	}
	if pings != transport.MaxMissedPings {
		t.Errorf("%d pings sent, want %d (syncing turns off after that many went unanswered)", pings, transport.MaxMissedPings)
	}
}

// TestUnansweredPingWaitsBriefly checks that a client that has answered
// none of our pings waits on a sync ping at most UnprovenSyncTimeout
// (100 ms), not the SyncTimeout of an answering client: with the latter
// at ten minutes, the calls would outlast the test's context.
func TestUnansweredPingWaitsBriefly(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{ignorePings: true, syncTimeout: 10 * time.Minute})
	for i := range transport.MaxMissedPings + 1 {
		start := time.Now()
		r, _, err := f.client.CallTool(f.ctx(), "test_progress", map[string]any{"n": 1}, map[string]any{"progressToken": i})
		if err != nil || r.IsError {
			t.Fatalf("call %d: %v %v", i, err, r)
		}
		t.Logf("call %d with progress, ping unanswered: %v", i, time.Since(start))
	}
}
