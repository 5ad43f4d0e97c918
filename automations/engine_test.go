package automations

import (
	"context"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testws"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// TestFiredRunsAreExecutedByTheRunEngine wires a scheduler to the real run
// engine: a workflow file's `every: 1s` trigger is synced, fired, executed
// by the engine's peer loop, and the next tick is measured from the
// recorded completion of the previous run.
func TestFiredRunsAreExecutedByTheRunEngine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := testws.New(t, map[string]string{"tick.yaml": "name: tick\nsteps:\n  - id: a\n    exec: [\"true\"]\non:\n  - every: 1s\n"})
	st := testws.Store(t, ws, sqlite.Options{})
	eng, err := runs.New(runs.Options{Store: st, Workspace: ws, AdoptEvery: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer eng.Stop()
	sched := New(Config{Store: st, LocksDir: ws.LocksDir(), Targets: &WorkflowTargets{Dir: ws.WorkflowsDir()}, Workspace: ws.Root, WorkflowsDir: ws.WorkflowsDir(), Check: 50 * time.Millisecond})
	sg := watch(sched)
	if err := sched.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer sched.Stop()

	var a *store.Automation
	sg.until(t, "two fires of tick:0", func() bool {
		list, _ := st.ListAutomations(ctx, store.AutomationFilter{Key: "tick:0"})
		if len(list) == 1 {
			a = list[0]
		}
		return a != nil && a.State.Fires >= 2
	})
	fires, err := st.ListFires(ctx, a.ID, 0)
	if err != nil || len(fires) < 2 {
		t.Fatalf("fires %v, %v", fires, err)
	}
	second, first := fires[len(fires)-2], fires[len(fires)-1]
	r1, err := st.GetRun(ctx, first.RunID)
	if err != nil || r1.Status != store.RunSucceeded || r1.Trigger.AutomationID != a.ID || r1.FinishedAt.IsZero() {
		t.Fatalf("first run: %+v, %v", r1, err)
	}
	// The tick is the finish + 1s rounded up to the second: never less
	// than a second after the finish.
	want := r1.FinishedAt.Add(time.Second)
	if c := want.Truncate(time.Second); !c.Equal(want) {
		want = c.Add(time.Second)
	}
	if !second.Nominal.Equal(want) || second.Actual.Sub(r1.FinishedAt) < time.Second {
		t.Fatalf("second fire at %v (nominal %v); want the first run's finish %v + 1s rounded up = %v", second.Actual, second.Nominal, r1.FinishedAt, want)
	}
}
