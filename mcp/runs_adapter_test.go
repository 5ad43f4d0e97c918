package mcp

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/mcp/mcptest"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/workspace"
)

// TestRunsAdapter drives the run tools against a real runs.Engine on the
// memory store (in-memory journals and locks).
func TestRunsAdapter(t *testing.T) {
	t.Parallel()
	ws := adapterWorkspace(t)
	st := memory.New()
	var srv *Server
	eng, err := runs.New(runs.Options{Store: st, Workspace: ws, InMemory: true, OnChange: func(id string) {
		if srv != nil {
			srv.RunChanged(id)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Stop(); st.Close() })
	f := setup(t, fixtureOpts{runs: eng, runStore: st})
	srv = f.srv

	var tl targetList
	f.ok("list_targets", nil, &tl)
	if len(tl.Targets) != 2 || tl.Targets[0].Name != "confirm" || len(tl.Targets[0].Triggers) != 1 || len(tl.Problems) != 1 {
		t.Fatalf("list_targets: %+v", tl)
	}
	if !strings.Contains(tl.Targets[0].Triggers[0], "Europe/Paris") || !strings.Contains(tl.Problems[0], "broken") {
		t.Errorf("list_targets: triggers %v, problems %v", tl.Targets[0].Triggers, tl.Problems)
	}

	r, m, err := f.client.CallTool(f.ctx(), "launch_run", map[string]any{"target": "hello", "input": map[string]any{"who": "adapter"}, "wait_seconds": 30}, map[string]any{"progressToken": "p1"})
	if err != nil || r.IsError {
		t.Fatalf("launch_run: %v %s", err, r.Text())
	}
	var run runs.Run
	decode(t, r, &run)
	if run.Status != "succeeded" || len(run.Steps) != 2 || run.Steps[0].Status != "succeeded" || !bytes.Contains(run.Result, []byte("hello adapter")) {
		t.Fatalf("launch_run waited: %s", r.StructuredContent)
	}
	progress := 0
	for _, msg := range f.client.Messages() {
		if tok, ok := progressOf(msg); ok && tok == `"p1"` {
			progress++
			if msg.Index > m.Index {
				t.Errorf("progress after the response")
			}
		}
	}
	if progress == 0 {
		t.Errorf("no progress notification")
	}

	var out outputPage
	f.ok("read_run_output", map[string]any{"run_id": run.ID}, &out)
	if !out.Done || len(out.Records) < 4 || out.Records[0].Type != "start" {
		t.Fatalf("read_run_output: %+v", out)
	}

	var parked runs.Run
	f.ok("launch_run", map[string]any{"target": "confirm", "wait_seconds": 30}, &parked)
	if parked.Status != "waiting" || parked.Question == nil || len(parked.Question.Choices) != 2 {
		t.Fatalf("parked: %+v", parked)
	}
	if m, err := f.client.Call(f.ctx(), "resources/subscribe", map[string]any{"uri": runURI(parked.ID)}); err != nil || m.Error != nil {
		t.Fatalf("subscribe: %v %s", err, m.Raw)
	}
	if msg := f.fails("answer_run", map[string]any{"run_id": parked.ID, "answer": "maybe"}); !strings.Contains(msg, "yes") {
		t.Errorf("wrong answer: %q", msg)
	}
	f.ok("answer_run", map[string]any{"run_id": parked.ID, "answer": "no"}, nil)
	if _, err := f.client.WaitFor(f.ctx(), func(m mcptest.Message) bool {
		return m.Method == "notifications/resources/updated" && bytes.Contains(m.Params, []byte(parked.ID))
	}); err != nil {
		t.Fatal(err)
	}
	var cancelled runs.Run
	f.ok("launch_run", map[string]any{"target": "confirm"}, &cancelled)
	f.ok("cancel_run", map[string]any{"run_id": cancelled.ID}, &cancelled)
	var page runPage
	f.ok("list_runs", map[string]any{"target": "confirm", "limit": 10}, &page)
	if len(page.Runs) != 2 {
		t.Errorf("list_runs: %d runs", len(page.Runs))
	}
	if msg := f.fails("launch_run", map[string]any{"target": "hello", "input": map[string]any{"who": 5}}); !strings.Contains(msg, "who") {
		t.Errorf("bad input: %q", msg)
	}
	if msg := f.fails("read_run_output", map[string]any{"run_id": run.ID, "cursor": "x"}); !strings.Contains(msg, "cursor") {
		t.Errorf("bad cursor: %q", msg)
	}
}

func decode(t *testing.T, r *mcptest.ToolResult, out any) {
	t.Helper()
	if err := jsonUnmarshal(r.StructuredContent, out); err != nil {
		t.Fatal(err)
	}
}

// adapterWorkspace is a workspace holding testdata/workflows: hello,
// confirm (with a cron trigger) and broken (does not parse).
func adapterWorkspace(t *testing.T) *workspace.Workspace {
	t.Helper()
	dir := t.TempDir()
	ws, err := workspace.Resolve(dir, dir, filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(ws.WorkflowsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(ws.WorkflowsDir(), os.DirFS("testdata/workflows")); err != nil {
		t.Fatal(err)
	}
	return ws
}
