package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
)

// waitingFor returns the next run id the fake engine starts waiting on
// that pick accepts.
func waitingFor(t *testing.T, ctx context.Context, waits <-chan string, pick func(string) bool) string {
	t.Helper()
	for {
		select {
		case id := <-waits:
			if pick(id) {
				return id
			}
		case <-ctx.Done():
			t.Fatal("the call never started waiting for the run")
		}
	}
}

// cancelledCalls are the real waiting tools, each as tools/call params: a
// launch_run wait (on a new run) and a read_run_output long poll (on the
// run given, from its end).
func cancelledCalls(runID, cursor string) []map[string]any {
	return []map[string]any{
		{"name": "launch_run", "arguments": map[string]any{"target": "steps", "wait_seconds": 60}},
		{"name": "read_run_output", "arguments": map[string]any{"run_id": runID, "cursor": cursor, "wait_seconds": 60}},
	}
}

// TestCancelledWaitsGetNoAnswer cancels, on stdio, a launch_run wait and
// a read_run_output long poll while each waits on its run: neither is
// answered (no result, no error), the runs go on, other calls are served.
func TestCancelledWaitsGetNoAnswer(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	waits := make(chan string, 100)
	f.runs.mu.Lock()
	f.runs.waits = waits
	f.runs.mu.Unlock()
	var r runs.Run
	f.ok("launch_run", map[string]any{"target": "steps"}, &r)
	var page outputPage
	f.ok("read_run_output", map[string]any{"run_id": r.ID}, &page)

	var ids []string
	for i, params := range cancelledCalls(r.ID, page.NextCursor) {
		id, _, err := f.client.Request("tools/call", params)
		if err != nil {
			t.Fatal(err)
		}
		waitingFor(t, f.ctx(), waits, func(w string) bool { return (w == r.ID) == (i == 1) })
		if err := f.client.Notify("notifications/cancelled", map[string]any{"requestId": json.RawMessage(id), "reason": "test"}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, string(id))
	}
	f.ok("list_targets", nil, nil)
	var list struct {
		Runs []runs.Run `json:"runs"`
	}
	f.ok("list_runs", map[string]any{"target": "steps"}, &list)
	if len(list.Runs) != 2 {
		t.Fatalf("list_runs: %+v, want the two runs", list.Runs)
	}
	for _, run := range list.Runs {
		if run.Status != store.RunRunning && run.Status != store.RunQueued {
			t.Errorf("run %s is %s after its wait was cancelled; it should go on", run.ID, run.Status)
		}
	}
	// Closing stdin makes ServeStdio finish every request and flush
	// every answer before it returns: then nothing more can come.
	f.stdin.Close()
	err := <-f.served
	f.served <- err
	_ = f.client.Wait(context.Background())
	for _, m := range f.client.Messages() {
		for _, id := range ids {
			if string(m.ID) == id && m.Method == "" {
				t.Errorf("cancelled request %s was answered: %s", id, m.Raw)
			}
		}
	}
}

// TestHTTPCancelledWaitsGetNoAnswer cancels, over HTTP, a launch_run wait
// and a read_run_output long poll while each waits: each POST's stream
// ends without the call's answer.
func TestHTTPCancelledWaitsGetNoAnswer(t *testing.T) {
	t.Parallel()
	h := setupHTTP(t, "2025-11-25")
	waits := make(chan string, 100)
	h.runs.mu.Lock()
	h.runs.waits = waits
	h.runs.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var r runs.Run
	h.callOK(`{"jsonrpc":"2.0","id":"l","method":"tools/call","params":{"name":"launch_run","arguments":{"target":"steps"}}}`, &r)
	var page outputPage
	h.callOK(fmt.Sprintf(`{"jsonrpc":"2.0","id":"o","method":"tools/call","params":{"name":"read_run_output","arguments":{"run_id":%q}}}`, r.ID), &page)

	for i, params := range cancelledCalls(r.ID, page.NextCursor) {
		id := fmt.Sprintf(`"wait-%d"`, i)
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "tools/call", "params": params})
		done := make(chan []json.RawMessage, 1)
		go func() { done <- events(t, h.send(string(body), nil)) }()
		waitingFor(t, ctx, waits, func(w string) bool { return (w == r.ID) == (i == 1) })
		if resp := h.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s}}`, id), nil); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("cancel: %d", resp.StatusCode)
		}
		for _, ev := range <-done {
			if strings.Contains(string(ev), `"id":`+id) {
				t.Errorf("cancelled %s was answered: %s", params["name"], ev)
			}
		}
	}
	h.runs.mu.Lock()
	order := append([]string(nil), h.runs.order...)
	h.runs.mu.Unlock()
	if len(order) != 2 {
		t.Errorf("runs %v, want the two launched", order)
	}
	for _, id := range order {
		if run, _ := h.runs.Get(ctx, id); run == nil || run.Status.Settled() {
			t.Errorf("run %s after its wait was cancelled: %+v; it should go on", id, run)
		}
	}
}

// callOK posts a tools/call and decodes its structuredContent into out.
func (h *httpFixture) callOK(body string, out any) {
	h.t.Helper()
	evs := events(h.t, h.send(body, nil))
	if len(evs) == 0 {
		h.t.Fatalf("%s: no answer", body)
	}
	var m struct {
		Result struct {
			IsError           bool            `json:"isError"`
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(evs[len(evs)-1], &m); err != nil || m.Result.IsError || json.Unmarshal(m.Result.StructuredContent, out) != nil {
		h.t.Fatalf("%s: %s", body, evs[len(evs)-1])
	}
}
