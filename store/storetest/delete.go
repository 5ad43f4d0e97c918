package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// testDeleteRuns: settled runs go with their ledgers and fire history,
// active ones stay, missing ones are reported, and batches beyond
// store.DeleteBatch are all deleted.
func testDeleteRuns(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreateAutomation(t, s, newTestAutomation("aut_a", "nightly"))
	nominal := autT0.Add(time.Minute)
	if _, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: nominal, Run: newFireRun("run_fired", "aut_a", nominal), NextDue: nominal.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, "run_fired", "c1")
	if _, err := s.StartStep(ctx, store.StepStart{RunID: "run_fired", Claim: "c1", Path: "a", Position: 1, Kind: "exec", Now: tNow}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SettleRun(ctx, store.SettleParams{ID: "run_fired", Claim: "c1", Status: store.RunSucceeded, Now: tNow}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []store.RunStatus{store.RunQueued, store.RunRunning, store.RunWaiting} {
		mustCreate(t, s, &store.Run{ID: "run_" + string(st), Status: st, CreatedAt: t0})
	}
	var many []string
	for i := range store.DeleteBatch + 7 {
		id := fmt.Sprintf("run_done_%04d", i)
		mustCreate(t, s, &store.Run{ID: id, Status: store.RunFailed, CreatedAt: t0, FinishedAt: t0})
		many = append(many, id)
	}

	ask := append([]string{"run_fired", "run_queued", "run_running", "run_waiting", "run_nope", "run_fired"}, many...)
	got, err := s.DeleteRuns(ctx, ask)
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]string{"run_fired"}, many...); !slices.Equal(got.Deleted, want) {
		t.Fatalf("deleted %d runs (%v...), want %d", len(got.Deleted), got.Deleted[:min(3, len(got.Deleted))], len(want))
	}
	if !slices.Equal(got.Active, []string{"run_queued", "run_running", "run_waiting"}) || !slices.Equal(got.Missing, []string{"run_nope"}) {
		t.Fatalf("active %v, missing %v", got.Active, got.Missing)
	}
	for _, id := range []string{"run_fired", many[0], many[len(many)-1]} {
		if _, err := s.GetRun(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetRun(%s) after delete: %v", id, err)
		}
		if _, err := s.Ledger(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Ledger(%s) after delete: %v", id, err)
		}
	}
	if c := autCounts(s); c.Runs != 3 || c.Automations != 1 {
		t.Fatalf("counts after delete: %+v", c)
	}
	fires, err := s.ListFires(ctx, "aut_a", 0)
	if err != nil || len(fires) != 0 {
		t.Fatalf("fire history after its run was deleted: %+v, %v", fires, err)
	}
	// Deleting again finds nothing; the automation still fires.
	if got, err := s.DeleteRuns(ctx, []string{"run_fired"}); err != nil || len(got.Deleted) != 0 || len(got.Missing) != 1 {
		t.Fatalf("second delete: %+v, %v", got, err)
	}
	next := nominal.Add(time.Minute)
	if res, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: next, Actual: next, Run: newFireRun("run_next", "aut_a", next), NextDue: next.Add(time.Minute)}); err != nil || res.AlreadyFired {
		t.Fatalf("fire after delete: %+v, %v", res, err)
	}
}
