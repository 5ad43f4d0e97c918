package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

func testFireOncePerSlot(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreateAutomation(t, s, newTestAutomation("aut_a", "nightly"))
	v0, _ := s.AutomationsVersion(ctx)
	nominal := autT0.Add(time.Minute)
	res, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: nominal.Add(1500 * time.Millisecond), Run: newFireRun("run_1", "aut_a", nominal), Missed: 2, NextDue: nominal.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if res.AlreadyFired || res.Fire.Outcome != store.FireQueued || res.Fire.RunID != "run_1" || res.Fire.Lag != 1500*time.Millisecond || res.Run == nil {
		t.Fatalf("first fire: %+v %+v", res, res.Fire)
	}
	r, err := s.GetRun(ctx, "run_1")
	if err != nil || r.Status != store.RunQueued || r.Trigger.AutomationID != "aut_a" || !r.Trigger.Nominal.Equal(nominal) {
		t.Fatalf("queued run: %+v, %v", r, err)
	}
	a := mustGetAutomation(t, s, "aut_a")
	st := a.State
	if !st.Cursor.Equal(nominal) || st.LastRunID != "run_1" || st.Fires != 1 || st.Missed != 2 || !st.NextDue.Equal(nominal.Add(time.Minute)) ||
		!st.LastStart.Equal(nominal.Add(1500*time.Millisecond)) || st.LastStatus != "queued" || !st.InFlight() {
		t.Fatalf("state after fire: %+v", st)
	}
	if a.Revision != 1 {
		t.Fatalf("a fire bumped the revision to %d", a.Revision)
	}
	if v, _ := s.AutomationsVersion(ctx); v != v0 {
		t.Fatal("a fire moved the automations version")
	}
	// The same slot again, with another run: nothing happens.
	res, err = s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: nominal.Add(2 * time.Second), Run: newFireRun("run_2", "aut_a", nominal)})
	if err != nil || !res.AlreadyFired || res.Fire == nil || res.Fire.RunID != "run_1" {
		t.Fatalf("second fire of one slot: %+v, %v", res, err)
	}
	if _, err := s.GetRun(ctx, "run_2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a repeated fire queued its run: %v", err)
	}
	// A scheduled slot not after the cursor is refused too.
	res, err = s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal.Add(-time.Second), Actual: nominal, Run: newFireRun("run_3", "aut_a", nominal)})
	if err != nil || !res.AlreadyFired {
		t.Fatalf("fire before the cursor: %+v, %v", res, err)
	}
	if c, _ := s.Counts(ctx); c.Runs != 1 {
		t.Fatalf("%d runs, want 1", c.Runs)
	}
	fires, err := s.ListFires(ctx, "aut_a", 0)
	if err != nil || len(fires) != 1 || !fires[0].Nominal.Equal(nominal) || fires[0].Outcome != store.FireQueued {
		t.Fatalf("ListFires = %+v, %v", fires, err)
	}
	if _, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_missing", Nominal: nominal, Run: newFireRun("run_4", "x", nominal)}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("fire of a missing automation: %v", err)
	}
}

func testRacingFires(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := newTestAutomation("aut_a", "nightly")
	a.Overlap = store.OverlapAllow
	mustCreateAutomation(t, s, a)
	const racers, slots = 8, 5
	queued := make(chan string, racers*slots)
	concurrently(t, racers, func(i int) error {
		for k := 1; k <= slots; k++ {
			nominal := autT0.Add(time.Duration(k) * time.Minute)
			res, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: nominal, Run: newFireRun(fmt.Sprintf("run_%d_%d", i, k), "aut_a", nominal)})
			if err != nil {
				return err
			}
			if !res.AlreadyFired {
				queued <- res.Run.ID
			}
		}
		return nil
	})
	close(queued)
	if n := len(queued); n > slots {
		t.Fatalf("%d runs queued for %d slots", n, slots)
	}
	if c, _ := s.Counts(ctx); c.Runs != len(queued) {
		t.Fatalf("%d runs stored, %d reported queued", c.Runs, len(queued))
	}
	if st := mustGetAutomation(t, s, "aut_a").State; st.Fires != int64(autCounts(s).Runs) {
		t.Fatalf("fires counter %d, runs %d", st.Fires, autCounts(s).Runs)
	}
}

func testOverlapPolicies(t *testing.T, newStore NewFunc) {
	ctx := context.Background()
	for _, tc := range []struct {
		overlap              string
		secondOutcome        string
		thirdOutcome         string
		runs                 int
		skipped              int64
		bufferedAfterSecond  bool
		releaseQueuesAnother bool
	}{
		{overlap: store.OverlapSkip, secondOutcome: store.FireSkipped, thirdOutcome: store.FireSkipped, runs: 1, skipped: 2},
		{overlap: store.OverlapAllow, secondOutcome: store.FireQueued, thirdOutcome: store.FireQueued, runs: 3},
		{overlap: store.OverlapBufferOne, secondOutcome: store.FireBuffered, thirdOutcome: store.FireSkipped, runs: 1, skipped: 1, bufferedAfterSecond: true, releaseQueuesAnother: true},
	} {
		t.Run(tc.overlap, func(t *testing.T) {
			t.Parallel()
			s := open(t, newStore)
			a := newTestAutomation("aut_a", "k")
			a.Overlap = tc.overlap
			mustCreateAutomation(t, s, a)
			fire := func(k int, manual bool) store.FireResult {
				t.Helper()
				nominal := autT0.Add(time.Duration(k) * time.Minute)
				res, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: nominal, Manual: manual, Run: newFireRun(fmt.Sprintf("run_%d", k), "aut_a", nominal)})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			if res := fire(1, false); res.Fire.Outcome != store.FireQueued {
				t.Fatalf("first fire: %s", res.Fire.Outcome)
			}
			if res := fire(2, false); res.Fire.Outcome != tc.secondOutcome {
				t.Fatalf("second fire while the first runs: %s, want %s", res.Fire.Outcome, tc.secondOutcome)
			}
			st := mustGetAutomation(t, s, "aut_a").State
			if !st.Buffered.IsZero() != tc.bufferedAfterSecond {
				t.Fatalf("buffered = %v", st.Buffered)
			}
			if res := fire(3, true); res.Fire.Outcome != tc.thirdOutcome || !res.Fire.Manual {
				t.Fatalf("third (manual) fire: %+v, want %s", res.Fire, tc.thirdOutcome)
			}
			st = mustGetAutomation(t, s, "aut_a").State
			if autCounts(s).Runs != tc.runs || st.Skipped != tc.skipped {
				t.Fatalf("runs %d skipped %d, want %d and %d", autCounts(s).Runs, st.Skipped, tc.runs, tc.skipped)
			}
			if !st.Cursor.Equal(autT0.Add(2 * time.Minute)) {
				t.Fatalf("a manual fire moved the cursor to %v", st.Cursor)
			}
			if !tc.releaseQueuesAnother {
				return
			}
			// The buffered fire waits while run_1 is in flight...
			nominal := autT0.Add(2 * time.Minute)
			res, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: autT0.Add(4 * time.Minute), Release: true, Run: newFireRun("run_rel", "aut_a", nominal)})
			if err != nil || !res.AlreadyFired {
				t.Fatalf("release while in flight: %+v, %v", res, err)
			}
			// ...and goes once it settled.
			settleFire(t, s, "aut_a", "run_1")
			res, err = s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: autT0.Add(4 * time.Minute), Release: true, Run: newFireRun("run_rel", "aut_a", nominal)})
			if err != nil || res.AlreadyFired || res.Fire.Outcome != store.FireQueued || res.Fire.RunID != "run_rel" {
				t.Fatalf("release: %+v, %v", res, err)
			}
			res, err = s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: autT0.Add(5 * time.Minute), Release: true, Run: newFireRun("run_rel2", "aut_a", nominal)})
			if err != nil || !res.AlreadyFired {
				t.Fatalf("second release: %+v, %v", res, err)
			}
			st = mustGetAutomation(t, s, "aut_a").State
			if !st.Buffered.IsZero() || st.LastRunID != "run_rel" || autCounts(s).Runs != 2 {
				t.Fatalf("after release: %+v, %d runs", st, autCounts(s).Runs)
			}
			// The history records the release, two minutes after its slot,
			// and each fire's run status.
			if _, err := s.ClaimRun(ctx, store.ClaimParams{ID: "run_1", Claim: "c1", PID: 1, Now: autT0.Add(5 * time.Minute)}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.SettleRun(ctx, store.SettleParams{ID: "run_1", Claim: "c1", Status: store.RunFailed, Error: "boom", Now: autT0.Add(6 * time.Minute)}); err != nil {
				t.Fatal(err)
			}
			fires, err := s.ListFires(ctx, "aut_a", 0)
			if err != nil {
				t.Fatal(err)
			}
			var rel, first *store.AutomationFire
			for _, f := range fires {
				switch f.RunID {
				case "run_rel":
					rel = f
				case "run_1":
					first = f
				}
			}
			if rel == nil || !rel.Actual.Equal(autT0.Add(4*time.Minute)) || rel.Lag != 2*time.Minute || rel.RunStatus != store.RunQueued {
				t.Fatalf("released fire %+v, want actual at 4m, lag 2m, run queued", rel)
			}
			if first == nil || first.RunStatus != store.RunFailed {
				t.Fatalf("first fire %+v, want its run's status failed", first)
			}
		})
	}
}

func testSettledRunEndsOverlap(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreateAutomation(t, s, newTestAutomation("aut_a", "k"))
	fire := func(k int) string {
		t.Helper()
		nominal := autT0.Add(time.Duration(k) * time.Minute)
		res, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: nominal, Run: newFireRun(fmt.Sprintf("run_%d", k), "aut_a", nominal)})
		if err != nil {
			t.Fatal(err)
		}
		return res.Fire.Outcome
	}
	if o := fire(1); o != store.FireQueued {
		t.Fatalf("first fire: %s", o)
	}
	if _, err := s.ClaimRun(ctx, store.ClaimParams{ID: "run_1", Claim: "c1", PID: 1, Now: autT0.Add(90 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if o := fire(2); o != store.FireSkipped {
		t.Fatalf("fire while run_1 runs: %s", o)
	}
	if _, err := s.SettleRun(ctx, store.SettleParams{ID: "run_1", Claim: "c1", Status: store.RunFailed, Error: "boom", Now: autT0.Add(150 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	// The scheduler has not recorded the finish; the run row decides.
	if o := fire(3); o != store.FireQueued {
		t.Fatalf("fire after run_1 settled: %s", o)
	}
}

func testPausedDoNotFire(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := newTestAutomation("aut_a", "k")
	a.Enabled, a.Note = false, "maintenance"
	mustCreateAutomation(t, s, a)
	_, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: autT0.Add(time.Minute), Manual: true, Run: newFireRun("run_1", "aut_a", autT0)})
	if !errors.Is(err, store.ErrPaused) {
		t.Fatalf("fire of a paused automation: %v", err)
	}
	if autCounts(s).Runs != 0 {
		t.Fatal("a paused automation queued a run")
	}
}

func testFireHistory(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := newTestAutomation("aut_a", "k")
	a.Overlap = store.OverlapAllow
	mustCreateAutomation(t, s, a)
	const n = store.FireHistory + 5
	for k := 1; k <= n; k++ {
		nominal := autT0.Add(time.Duration(k) * time.Minute)
		if _, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: nominal, Run: newFireRun(fmt.Sprintf("run_%d", k), "aut_a", nominal)}); err != nil {
			t.Fatal(err)
		}
	}
	fires, err := s.ListFires(ctx, "aut_a", 100)
	if err != nil || len(fires) != store.FireHistory {
		t.Fatalf("ListFires = %d, %v; want %d", len(fires), err, store.FireHistory)
	}
	if !fires[0].Nominal.Equal(autT0.Add(n*time.Minute)) || !fires[len(fires)-1].Nominal.Equal(autT0.Add((n-store.FireHistory+1)*time.Minute)) {
		t.Fatalf("kept %v .. %v", fires[0].Nominal, fires[len(fires)-1].Nominal)
	}
	if three, _ := s.ListFires(ctx, "aut_a", 3); len(three) != 3 {
		t.Fatalf("limit 3 gave %d", len(three))
	}
	if st := mustGetAutomation(t, s, "aut_a").State; st.Fires != n {
		t.Fatalf("fires counter %d, want %d", st.Fires, n)
	}
	if err := s.DeleteAutomation(ctx, "aut_a", 0); err != nil {
		t.Fatal(err)
	}
	if fires, _ := s.ListFires(ctx, "aut_a", 0); len(fires) != 0 {
		t.Fatalf("%d fires left after delete", len(fires))
	}
}
