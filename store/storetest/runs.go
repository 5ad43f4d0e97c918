package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

func testRuns(t *testing.T, newStore NewFunc) {
	runCases(t, newStore, []storeCase{
		{"create and get", testCreateGetRun},
		{"operation outcome", testOperationOutcome},
		{"list filters and pages", testListRuns},
		{"runnable and pending", testRunnable},
		{"claim", testClaim},
		{"ledger", testLedger},
		{"park and answer", testParkAnswer},
		{"settle and release", testSettleRelease},
		{"cancel", testCancel},
		{"settle with ledger outcomes", testSettleLedger},
		{"run claims", testRunClaims},
		{"changed runs", testChangedRuns},
		{"next wake", testNextWake},
		{"delete", testDeleteRuns},
	})
}

// t0 is a fixed instant the run cases create their runs at; tNow, later,
// is when their writes happen: the suite passes every write its time.
var (
	t0   = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tNow = t0.Add(time.Hour)
)

func testCreateGetRun(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := &store.Run{ID: "run_a", Target: "hello", Input: json.RawMessage(`{"who":"x"}`), Literals: json.RawMessage(`{"def":1}`), Trigger: store.Trigger{Kind: "manual"}}
	if err := s.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(ctx, "run_a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.RunQueued || got.Revision != 1 || got.Target != "hello" || string(got.Input) != `{"who":"x"}` || string(got.Literals) != `{"def":1}` || got.Trigger.Kind != "manual" {
		t.Fatalf("got %+v", got)
	}
	if got.OwnerPID != 0 || got.Claim != "" || got.Question != nil || !got.WakeAt.IsZero() || !got.StartedAt.IsZero() || !got.FinishedAt.IsZero() || got.CancelRequested {
		t.Fatalf("a new run has owner or wait fields set: %+v", got)
	}
	if err := s.CreateRun(ctx, &store.Run{ID: "run_a", Target: "other"}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second create with the same id: %v, want ErrExists", err)
	}
	if _, err := s.GetRun(ctx, "run_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetRun(missing): %v, want ErrNotFound", err)
	}
	if c, _ := s.Counts(ctx); c.Runs != 1 {
		t.Fatalf("Counts().Runs = %d, want 1", c.Runs)
	}
}

func testOperationOutcome(t *testing.T, s store.Store) {
	ctx := context.Background()
	opCtx := store.WithOpID(ctx, "op_create_b")
	if err := s.CreateRun(opCtx, &store.Run{ID: "run_b", Target: "t"}); err != nil {
		t.Fatal(err)
	}
	if o, err := s.Outcome(ctx, "op_create_b"); err != nil || o != store.Committed {
		t.Fatalf("Outcome = %v, %v; want committed", o, err)
	}
	if err := s.CreateRun(opCtx, &store.Run{ID: "run_c", Target: "t"}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("repeated operation id: %v, want ErrExists", err)
	}
	if _, err := s.GetRun(ctx, "run_c"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused operation left run_c behind: %v", err)
	}
}

func mustCreate(t *testing.T, s store.Store, r *store.Run) *store.Run {
	t.Helper()
	if r.Target == "" {
		r.Target = "t"
	}
	if err := s.CreateRun(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

func mustClaim(t *testing.T, s store.Store, id, claim string) *store.Run {
	t.Helper()
	c, err := s.ClaimRun(context.Background(), store.ClaimParams{ID: id, Claim: claim, PID: 4242, Now: tNow})
	if err != nil {
		t.Fatalf("claim %s: %v", id, err)
	}
	return c.Run
}

func ids(runs []*store.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

func testListRuns(t *testing.T, s store.Store) {
	ctx := context.Background()
	for i := range 7 {
		target := "a"
		if i%2 == 1 {
			target = "b"
		}
		mustCreate(t, s, &store.Run{ID: fmt.Sprintf("run_%d", i), Target: target, CreatedAt: t0.Add(time.Duration(i) * time.Second)})
	}
	mustClaim(t, s, "run_3", "c3")

	all, next, err := s.ListRuns(ctx, store.RunFilter{})
	if err != nil || next != "" {
		t.Fatalf("list all: %v, next %q", err, next)
	}
	if got := fmt.Sprint(ids(all)); got != "[run_6 run_5 run_4 run_3 run_2 run_1 run_0]" {
		t.Fatalf("list all = %s, want newest first", got)
	}
	var paged []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		page, next, err := s.ListRuns(ctx, store.RunFilter{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 3 {
			t.Fatalf("page of %d runs with limit 3", len(page))
		}
		paged = append(paged, ids(page)...)
		if next == "" {
			break
		}
		cursor = next
	}
	if fmt.Sprint(paged) != fmt.Sprint(ids(all)) {
		t.Fatalf("pages %v, want %v", paged, ids(all))
	}
	bs, _, err := s.ListRuns(ctx, store.RunFilter{Target: "b"})
	if err != nil || fmt.Sprint(ids(bs)) != "[run_5 run_3 run_1]" {
		t.Fatalf("target b: %v %v", ids(bs), err)
	}
	running, _, err := s.ListRuns(ctx, store.RunFilter{Status: []store.RunStatus{store.RunRunning}})
	if err != nil || fmt.Sprint(ids(running)) != "[run_3]" {
		t.Fatalf("status running: %v %v", ids(running), err)
	}
	both, _, err := s.ListRuns(ctx, store.RunFilter{Status: []store.RunStatus{store.RunRunning, store.RunQueued}, Target: "a"})
	if err != nil || fmt.Sprint(ids(both)) != "[run_6 run_4 run_2 run_0]" {
		t.Fatalf("queued or running with target a: %v %v", ids(both), err)
	}
	r3, _ := s.GetRun(ctx, "run_3")
	changed, _, err := s.ListRuns(ctx, store.RunFilter{UpdatedAfter: r3.UpdatedAt.Add(-time.Millisecond)})
	if err != nil || len(changed) == 0 || !containsID(changed, "run_3") {
		t.Fatalf("updated after the claim: %v %v", ids(changed), err)
	}
	if later, _, _ := s.ListRuns(ctx, store.RunFilter{UpdatedAfter: r3.UpdatedAt.Add(time.Hour)}); len(later) != 0 {
		t.Fatalf("updated after the future: %v", ids(later))
	}
	if _, _, err := s.ListRuns(ctx, store.RunFilter{Cursor: "nonsense"}); err == nil {
		t.Fatal("an invalid cursor was accepted")
	}
}

func containsID(runs []*store.Run, id string) bool {
	for _, r := range runs {
		if r.ID == id {
			return true
		}
	}
	return false
}

func testRunnable(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := tNow
	mustCreate(t, s, &store.Run{ID: "run_queued", CreatedAt: t0, Literals: json.RawMessage(`{"big":"definition"}`)})
	mustCreate(t, s, &store.Run{ID: "run_running", CreatedAt: t0.Add(1 * time.Millisecond)})
	mustClaim(t, s, "run_running", "c1")
	mustCreate(t, s, &store.Run{ID: "run_sleep_due", CreatedAt: t0.Add(2 * time.Millisecond)})
	mustClaim(t, s, "run_sleep_due", "c2")
	mustCreate(t, s, &store.Run{ID: "run_sleep_later", CreatedAt: t0.Add(3 * time.Millisecond)})
	mustClaim(t, s, "run_sleep_later", "c3")
	mustCreate(t, s, &store.Run{ID: "run_question", CreatedAt: t0.Add(4 * time.Millisecond)})
	mustClaim(t, s, "run_question", "c4")
	mustCreate(t, s, &store.Run{ID: "run_done", CreatedAt: t0.Add(5 * time.Millisecond)})
	mustClaim(t, s, "run_done", "c5")

	if _, err := s.ParkRun(ctx, store.ParkParams{Now: tNow, ID: "run_sleep_due", Claim: "c2", WakeAt: now.Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ParkRun(ctx, store.ParkParams{Now: tNow, ID: "run_sleep_later", Claim: "c3", WakeAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	startAsk(t, s, "run_question", "c4", "q1")
	if _, err := s.SettleRun(ctx, store.SettleParams{Now: tNow, ID: "run_done", Claim: "c5", Status: store.RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	got, err := s.RunnableRuns(ctx, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids(got)) != "[run_queued run_sleep_due run_running]" {
		t.Fatalf("runnable = %v, want the queued and the due sleeper, then the running one, oldest first", ids(got))
	}
	if len(got[0].Literals) != 0 {
		t.Fatalf("RunnableRuns filled Literals: %s", got[0].Literals)
	}
	if got, _ := s.RunnableRuns(ctx, now, 1); len(got) != 1 {
		t.Fatalf("limit 1 gave %d runs", len(got))
	}
	if got, _ := s.RunnableRuns(ctx, now.Add(2*time.Hour), 0); !containsID(got, "run_sleep_later") {
		t.Fatalf("the later sleeper is not runnable two hours on: %v", ids(got))
	}
	n, err := s.CountPending(ctx)
	if err != nil || n != 4 {
		t.Fatalf("CountPending = %d, %v; want 4 (queued, running, two sleepers)", n, err)
	}
}

func testChangedRuns(t *testing.T, s store.Store) {
	ctx := context.Background()
	start, err := s.LastRunChange(ctx)
	if err != nil || start != 0 {
		t.Fatalf("LastRunChange of an empty store = %d, %v; want 0", start, err)
	}
	mustCreate(t, s, &store.Run{ID: "run_a"})
	mustCreate(t, s, &store.Run{ID: "run_b"})
	mustClaim(t, s, "run_a", "c")
	got, err := s.ChangedRuns(ctx, 0, 0)
	if err != nil || len(got) != 2 {
		t.Fatalf("ChangedRuns = %+v, %v; want both runs", got, err)
	}
	// In change order, each run once with its latest change.
	if got[0].ID != "run_b" || got[0].Revision != 1 || got[1].ID != "run_a" || got[1].Revision != 2 || got[0].Seq >= got[1].Seq {
		t.Fatalf("ChangedRuns = %+v, want run_b (rev 1) then run_a (rev 2)", got)
	}
	last, err := s.LastRunChange(ctx)
	if err != nil || last != got[1].Seq {
		t.Fatalf("LastRunChange = %d, %v; want %d", last, err, got[1].Seq)
	}
	if got, _ := s.ChangedRuns(ctx, last, 0); len(got) != 0 {
		t.Fatalf("changes after the last one: %+v", got)
	}
	// A poller that passes the last number it saw sees each later change.
	if _, err := s.SettleRun(ctx, store.SettleParams{Now: tNow, ID: "run_a", Claim: "c", Status: store.RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CancelRun(ctx, "run_b", "stop"); err != nil {
		t.Fatal(err)
	}
	got, err = s.ChangedRuns(ctx, last, 1)
	if err != nil || len(got) != 1 || got[0].ID != "run_a" || got[0].Revision != 3 || got[0].Seq <= last {
		t.Fatalf("ChangedRuns after %d, limit 1 = %+v, %v; want run_a (rev 3)", last, got, err)
	}
	got, err = s.ChangedRuns(ctx, got[0].Seq, 0)
	if err != nil || len(got) != 1 || got[0].ID != "run_b" || got[0].Revision != 2 {
		t.Fatalf("ChangedRuns, next page = %+v, %v; want run_b (rev 2)", got, err)
	}
}
