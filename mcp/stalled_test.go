package mcp

import (
	"context"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
)

// TestGetRunSaysOwnerGone: get_run of a running run whose lock nobody
// holds (its owner died) says so in stalled.
func TestGetRunSaysOwnerGone(t *testing.T) {
	t.Parallel()
	ws := adapterWorkspace(t)
	st := memory.New()
	eng, err := runs.New(runs.Options{Store: st, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Stop(); st.Close() })
	if err := st.CreateRun(context.Background(), &store.Run{ID: "run_orphan", Target: "hello", Status: store.RunRunning, OwnerPID: 999999, Claim: "c"}); err != nil {
		t.Fatal(err)
	}
	f := setup(t, fixtureOpts{runs: eng, runStore: st})
	var r runs.Run
	f.ok("get_run", map[string]any{"run_id": "run_orphan"}, &r)
	if r.Status != store.RunRunning || !strings.Contains(r.Stalled, "owner pid 999999 gone since ") || !strings.Contains(r.Stalled, "waiting for a peer") {
		t.Fatalf("get_run: %s, stalled %q", r.Status, r.Stalled)
	}
}
