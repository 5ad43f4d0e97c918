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

// The FireMany cases: FireMany decides every fire of a batch exactly as
// Fire would, each with its own outcome, in one operation.

// manySlot is the slot the FireMany cases fire.
var manySlot = autT0.Add(time.Minute)

// scheduledFire is a scheduler's fire of automation id at nominal, queuing run.
func scheduledFire(id string, nominal time.Time, run string) store.FireParams {
	return store.FireParams{AutomationID: id, Nominal: nominal, Actual: nominal.Add(3 * time.Millisecond), NextDue: nominal.Add(time.Minute), Run: newFireRun(run, id, nominal)}
}

func testFireMany(t *testing.T, newStore NewFunc) {
	runCases(t, newStore, []storeCase{
		{"each fire gets its own outcome", testFireManyOutcomes},
		{"later fires of one automation see the earlier ones", testFireManyInOrder},
		{"a release in a batch", testFireManyRelease},
		{"a settled latest run is recorded before the next", testFireManySettledLatest},
		{"many automations at one instant", testFireManyAtOneInstant},
		{"racing batches fire each slot once", testFireManyRacing},
	})
}

func testFireManyOutcomes(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, id := range []string{"aut_ok", "aut_ok2", "aut_paused", "aut_edited", "aut_moved", "aut_past", "aut_taken", "aut_manual"} {
		a := newTestAutomation(id, id)
		a.Trigger = store.AutomationTrigger{Kind: store.TriggerCron, Cron: "* * * * *", TZ: "UTC"}
		a.Enabled = id != "aut_paused"
		mustCreateAutomation(t, s, a)
	}
	// aut_edited changed after the fire was prepared; aut_moved's
	// cursor moved; aut_past's cursor is already at the manySlot;
	// aut_taken's run id is taken; aut_manual was fired by hand at
	// the very instant of the manySlot.
	edit := mustGetAutomation(t, s, "aut_edited")
	edit.Input = json.RawMessage(`{"who":"y"}`)
	if err := s.UpdateAutomation(ctx, edit, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_moved", Cursor: autT0.Add(30 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_past", Cursor: manySlot}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(ctx, newFireRun("run_taken", "x", manySlot)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_manual", Nominal: manySlot, Actual: manySlot, Manual: true, Run: newFireRun("run_by_hand", "aut_manual", manySlot)}); err != nil {
		t.Fatal(err)
	}
	expect := &store.FireExpect{Revision: 1}
	ps := []store.FireParams{
		scheduledFire("aut_ok", manySlot, "run_ok"),
		scheduledFire("aut_paused", manySlot, "run_paused"),
		scheduledFire("aut_missing", manySlot, "run_missing"),
		scheduledFire("aut_edited", manySlot, "run_edited"),
		scheduledFire("aut_moved", manySlot, "run_moved"),
		scheduledFire("aut_past", manySlot, "run_past"),
		scheduledFire("aut_taken", manySlot, "run_taken"),
		scheduledFire("aut_manual", manySlot, "run_manual"),
		scheduledFire("aut_ok2", manySlot, "run_ok2"),
	}
	for i := range ps {
		ps[i].Expect = expect
	}
	ps[0].Missed = 2
	outs, err := s.FireMany(ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != len(ps) {
		t.Fatalf("%d outcomes for %d fires", len(outs), len(ps))
	}
	for i, want := range []struct {
		err     error
		already bool
	}{{}, {err: store.ErrPaused}, {err: store.ErrNotFound}, {err: store.ErrStale}, {err: store.ErrStale}, {already: true}, {err: store.ErrExists}, {already: true}, {}} {
		o := outs[i]
		switch {
		case want.err != nil:
			if !errors.Is(o.Err, want.err) {
				t.Errorf("%s: err %v, want %v", ps[i].AutomationID, o.Err, want.err)
			}
		case o.Err != nil:
			t.Errorf("%s: %v", ps[i].AutomationID, o.Err)
		case o.Result.AlreadyFired != want.already:
			t.Errorf("%s: %+v, want already fired %v", ps[i].AutomationID, o.Result, want.already)
		case !want.already && (o.Result.Fire.Outcome != store.FireQueued || o.Result.Run == nil || o.Result.Fire.Lag != 3*time.Millisecond):
			t.Errorf("%s: %+v %+v", ps[i].AutomationID, o.Result, o.Result.Fire)
		}
	}
	var se *store.StaleError
	if !errors.As(outs[3].Err, &se) || se.Expected != 1 || se.Actual != 2 {
		t.Errorf("edited automation: %v, want a *StaleError from revision 1 to 2", outs[3].Err)
	}
	if outs[7].Result.Fire == nil || outs[7].Result.Fire.RunID != "run_by_hand" {
		t.Errorf("the manySlot fired by hand reports %+v", outs[7].Result.Fire)
	}
	// Exactly the two fires that went through queued their runs.
	if c := autCounts(s); c.Runs != 4 { // run_taken, run_by_hand, run_ok, run_ok2
		t.Fatalf("%d runs, want 4", c.Runs)
	}
	for _, id := range []string{"run_ok", "run_ok2"} {
		if _, err := s.GetRun(ctx, id); err != nil {
			t.Fatalf("run %s: %v", id, err)
		}
	}
	st := mustGetAutomation(t, s, "aut_ok").State
	if !st.Cursor.Equal(manySlot) || st.Missed != 2 || st.Fires != 1 || st.LastRunID != "run_ok" || !st.NextDue.Equal(manySlot.Add(time.Minute)) || !st.InFlight() {
		t.Fatalf("state after the batch: %+v", st)
	}
	for _, id := range []string{"aut_paused", "aut_edited", "aut_moved", "aut_taken"} {
		if st := mustGetAutomation(t, s, id).State; st.Fires != 0 || st.LastRunID != "" {
			t.Errorf("%s: a refused fire changed the state: %+v", id, st)
		}
		if fs, _ := s.ListFires(ctx, id, 0); len(fs) != 0 {
			t.Errorf("%s: a refused fire was recorded: %+v", id, fs)
		}
	}
	if fs, _ := s.ListFires(ctx, "aut_manual", 0); len(fs) != 1 || fs[0].RunID != "run_by_hand" {
		t.Errorf("aut_manual fires: %+v", fs)
	}
	if outs, err := s.FireMany(ctx, nil); err != nil || len(outs) != 0 {
		t.Fatalf("empty batch: %v, %v", outs, err)
	}
}

func testFireManyInOrder(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreateAutomation(t, s, newTestAutomation("aut_a", "k")) // overlap skip
	outs, err := s.FireMany(ctx, []store.FireParams{
		scheduledFire("aut_a", manySlot, "run_1"),
		scheduledFire("aut_a", manySlot, "run_2"),
		scheduledFire("aut_a", manySlot.Add(time.Minute), "run_3"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].Err != nil || outs[0].Result.Fire.Outcome != store.FireQueued {
		t.Fatalf("first: %+v", outs[0])
	}
	if outs[1].Err != nil || !outs[1].Result.AlreadyFired || outs[1].Result.Fire.RunID != "run_1" {
		t.Fatalf("the same manySlot again: %+v", outs[1])
	}
	if outs[2].Err != nil || outs[2].Result.Fire.Outcome != store.FireSkipped {
		t.Fatalf("the next manySlot while run_1 is in flight: %+v", outs[2].Result.Fire)
	}
	st := mustGetAutomation(t, s, "aut_a").State
	if st.Fires != 1 || st.Skipped != 1 || !st.Cursor.Equal(manySlot.Add(time.Minute)) || autCounts(s).Runs != 1 {
		t.Fatalf("state %+v, %d runs", st, autCounts(s).Runs)
	}
}

func testFireManyRelease(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := newTestAutomation("aut_a", "k")
	a.Overlap = store.OverlapBufferOne
	mustCreateAutomation(t, s, a)
	mustCreateAutomation(t, s, newTestAutomation("aut_b", "b"))
	outs, err := s.FireMany(ctx, []store.FireParams{scheduledFire("aut_a", manySlot, "run_1"), scheduledFire("aut_a", manySlot.Add(time.Minute), "run_2")})
	if err != nil || outs[1].Result.Fire.Outcome != store.FireBuffered {
		t.Fatalf("buffered: %+v, %v", outs, err)
	}
	// While a fire is buffered, a fire prepared ahead is refused: the
	// release comes first.
	next := scheduledFire("aut_a", manySlot.Add(2*time.Minute), "run_3")
	next.Expect = &store.FireExpect{Revision: 1, Cursor: manySlot.Add(time.Minute)}
	if outs, err := s.FireMany(ctx, []store.FireParams{next, scheduledFire("aut_b", manySlot, "run_b")}); err != nil || !errors.Is(outs[0].Err, store.ErrStale) || outs[1].Err != nil {
		t.Fatalf("prepared fire with a buffered one waiting: %+v, %v", outs, err)
	}
	settleFire(t, s, "aut_a", "run_1")
	rel := store.FireParams{AutomationID: "aut_a", Nominal: manySlot.Add(time.Minute), Actual: manySlot.Add(2 * time.Minute), Release: true, Run: newFireRun("run_rel", "aut_a", manySlot)}
	outs, err = s.FireMany(ctx, []store.FireParams{rel, scheduledFire("aut_b", manySlot.Add(time.Minute), "run_b2")})
	if err != nil || outs[0].Err != nil || outs[0].Result.AlreadyFired || outs[0].Result.Fire.RunID != "run_rel" || outs[1].Err != nil {
		t.Fatalf("release: %+v, %v", outs, err)
	}
	if st := mustGetAutomation(t, s, "aut_a").State; !st.Buffered.IsZero() || st.LastRunID != "run_rel" {
		t.Fatalf("after the release: %+v", st)
	}
}

func testFireManySettledLatest(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreateAutomation(t, s, newTestAutomation("aut_a", "k"))
	mustCreateAutomation(t, s, newTestAutomation("aut_b", "b"))
	if _, err := s.FireMany(ctx, []store.FireParams{scheduledFire("aut_a", manySlot, "run_1"), scheduledFire("aut_b", manySlot, "run_b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimRun(ctx, store.ClaimParams{ID: "run_1", Claim: "c1", PID: 1, Now: manySlot.Add(10 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SettleRun(ctx, store.SettleParams{ID: "run_1", Claim: "c1", Status: store.RunFailed, Error: "boom", Now: manySlot.Add(20 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	r, _ := s.GetRun(ctx, "run_1")
	// The next fire comes after the settle, as it would.
	next := manySlot.Add(time.Minute)
	p := scheduledFire("aut_a", next, "run_2")
	outs, err := s.FireMany(ctx, []store.FireParams{p, scheduledFire("aut_b", next, "run_b2")})
	if err != nil || outs[0].Err != nil || outs[0].Result.Fire.Outcome != store.FireQueued {
		t.Fatalf("fire after the settle: %+v, %v", outs, err)
	}
	st := mustGetAutomation(t, s, "aut_a").State
	if st.LastRunID != "run_2" || !st.InFlight() || st.Fires != 2 || !st.LastFinish.Equal(r.FinishedAt) {
		t.Fatalf("state: %+v; run_1 finished at %v", st, r.FinishedAt)
	}
	// The finish of run_1 is in the history until run_2 settles.
	if st.LastStatus != "queued" {
		t.Fatalf("last status %q, want queued (run_2)", st.LastStatus)
	}
}

func testFireManyAtOneInstant(t *testing.T, s store.Store) {
	ctx := context.Background()
	const n, slots = 75, store.FireHistory*2 + 3 // batches of unequal sizes; history pruned
	var ps []store.FireParams
	for i := range n {
		a := newTestAutomation(fmt.Sprintf("aut_%03d", i), fmt.Sprintf("k%03d", i))
		a.Overlap = store.OverlapAllow
		mustCreateAutomation(t, s, a)
	}
	for k := 1; k <= slots; k++ {
		nominal := autT0.Add(time.Duration(k) * time.Minute)
		ps = ps[:0]
		for i := range n {
			id := fmt.Sprintf("aut_%03d", i)
			ps = append(ps, scheduledFire(id, nominal, fmt.Sprintf("run_%03d_%02d", i, k)))
		}
		outs, err := s.FireMany(ctx, ps)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range outs {
			if o.Err != nil || o.Result.AlreadyFired || o.Result.Fire.Outcome != store.FireQueued || o.Result.Run.ID != ps[i].Run.ID {
				t.Fatalf("manySlot %d, %s: %+v", k, ps[i].AutomationID, o)
			}
		}
	}
	// Again: every manySlot is taken.
	outs, err := s.FireMany(ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		if o.Err != nil || !o.Result.AlreadyFired {
			t.Fatalf("a fired manySlot again: %+v", o)
		}
	}
	if c := autCounts(s); c.Runs != n*slots {
		t.Fatalf("%d runs, want %d", c.Runs, n*slots)
	}
	for i := range n {
		id := fmt.Sprintf("aut_%03d", i)
		fs, err := s.ListFires(ctx, id, 0)
		if err != nil || len(fs) != store.FireHistory || !fs[0].Nominal.Equal(autT0.Add(slots*time.Minute)) {
			t.Fatalf("%s: %d fires, newest %v, %v", id, len(fs), fs[0].Nominal, err)
		}
		if st := mustGetAutomation(t, s, id).State; st.Fires != slots || !st.Cursor.Equal(autT0.Add(slots*time.Minute)) {
			t.Fatalf("%s: %+v", id, st)
		}
	}
}

func testFireManyRacing(t *testing.T, s store.Store) {
	ctx := context.Background()
	const n, racers = 10, 4
	for i := range n {
		a := newTestAutomation(fmt.Sprintf("aut_%d", i), fmt.Sprintf("k%d", i))
		a.Overlap = store.OverlapAllow
		mustCreateAutomation(t, s, a)
	}
	queued := make(chan string, n*racers*3)
	concurrently(t, racers, func(r int) error {
		for k := 1; k <= 3; k++ {
			nominal := autT0.Add(time.Duration(k) * time.Minute)
			var ps []store.FireParams
			for i := range n {
				ps = append(ps, scheduledFire(fmt.Sprintf("aut_%d", i), nominal, fmt.Sprintf("run_%d_%d_%d", r, i, k)))
			}
			if r%2 == 1 { // half of them fire one at a time
				for _, p := range ps {
					res, err := s.Fire(ctx, p)
					if err != nil {
						return err
					}
					if !res.AlreadyFired {
						queued <- res.Run.ID
					}
				}
				continue
			}
			outs, err := s.FireMany(ctx, ps)
			if err != nil {
				return err
			}
			for _, o := range outs {
				if o.Err != nil {
					return o.Err
				}
				if !o.Result.AlreadyFired {
					queued <- o.Result.Run.ID
				}
			}
		}
		return nil
	})
	close(queued)
	if len(queued) != n*3 {
		t.Fatalf("%d runs queued for %d slots", len(queued), n*3)
	}
	if c := autCounts(s); c.Runs != n*3 {
		t.Fatalf("%d runs stored, want %d", c.Runs, n*3)
	}
}
