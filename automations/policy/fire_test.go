package policy

import (
	"errors"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

var (
	t0   = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	slot = t0.Add(time.Minute)
)

// automation is an enabled automation with overlap policy overlap whose
// cursor is at t0; inFlight gives it a latest run started at t0.
func automation(overlap string, inFlight bool) *store.Automation {
	a := &store.Automation{ID: "aut_a", Key: "k", Enabled: true, Overlap: overlap, Revision: 2}
	a.State.Cursor = t0
	if inFlight {
		a.State.LastRunID, a.State.LastStart, a.State.LastStatus = "run_0", t0, "queued"
	}
	return a
}

func fireAt(nominal time.Time) store.FireParams {
	return store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: nominal.Add(1500 * time.Microsecond), Run: &store.Run{ID: "run_1"}}
}

func TestPlanFire(t *testing.T) {
	t.Parallel()
	running := &store.Run{ID: "run_0", Status: store.RunRunning, UpdatedAt: t0}
	settled := &store.Run{ID: "run_0", Status: store.RunFailed, UpdatedAt: t0, FinishedAt: t0.Add(30 * time.Second)}
	buffered := automation(store.OverlapBufferOne, true)
	buffered.State.Buffered = slot
	bufferedFire := &store.AutomationFire{AutomationID: "aut_a", Nominal: slot, Outcome: store.FireBuffered}
	paused := automation(store.OverlapSkip, false)
	paused.Enabled, paused.Note = false, "maintenance"
	withManual := fireAt(t0.Add(-time.Hour))
	withManual.Manual = true
	release := fireAt(slot)
	release.Release = true
	expectOld := fireAt(slot)
	expectOld.Expect = &store.FireExpect{Revision: 1, Cursor: t0}
	expectMoved := fireAt(slot)
	expectMoved.Expect = &store.FireExpect{Revision: 2, Cursor: t0.Add(-time.Minute)}
	expectOK := fireAt(slot)
	expectOK.Expect = &store.FireExpect{Revision: 2, Cursor: t0}

	cases := []struct {
		name     string
		a        *store.Automation
		last     *store.Run
		existing *store.AutomationFire
		p        store.FireParams
		err      error // errors.Is; nil: accepted
		outcome  string
		already  bool
		queue    bool
	}{
		{name: "nothing in flight: queued", a: automation(store.OverlapSkip, false), p: fireAt(slot), outcome: store.FireQueued, queue: true},
		{name: "in flight, skip", a: automation(store.OverlapSkip, true), last: running, p: fireAt(slot), outcome: store.FireSkipped},
		{name: "in flight, allow", a: automation(store.OverlapAllow, true), last: running, p: fireAt(slot), outcome: store.FireQueued, queue: true},
		{name: "in flight, buffer one", a: automation(store.OverlapBufferOne, true), last: running, p: fireAt(slot), outcome: store.FireBuffered},
		{name: "buffer one with one buffered: skipped", a: buffered, last: running, p: fireAt(slot.Add(time.Minute)), outcome: store.FireSkipped},
		{name: "latest run settled unrecorded: queued", a: automation(store.OverlapSkip, true), last: settled, p: fireAt(slot), outcome: store.FireQueued, queue: true},
		{name: "latest run gone: queued", a: automation(store.OverlapSkip, true), p: fireAt(slot), outcome: store.FireQueued, queue: true},
		{name: "slot fired before", a: automation(store.OverlapSkip, false), existing: &store.AutomationFire{Nominal: slot, Outcome: store.FireQueued}, p: fireAt(slot), already: true},
		{name: "slot not after the cursor", a: automation(store.OverlapSkip, false), p: fireAt(t0), already: true},
		{name: "manual fire before the cursor", a: automation(store.OverlapSkip, false), p: withManual, outcome: store.FireQueued, queue: true},
		{name: "paused", a: paused, p: fireAt(slot), err: store.ErrPaused},
		{name: "prepared from an older revision", a: automation(store.OverlapSkip, false), p: expectOld, err: store.ErrStale},
		{name: "prepared before the cursor moved", a: automation(store.OverlapSkip, false), p: expectMoved, err: store.ErrStale},
		{name: "prepared and unchanged", a: automation(store.OverlapSkip, false), p: expectOK, outcome: store.FireQueued, queue: true},
		{name: "release of the buffered fire, run settled", a: buffered, last: settled, existing: bufferedFire, p: release, outcome: store.FireQueued, queue: true},
		{name: "release while the run still runs", a: buffered, last: running, existing: bufferedFire, p: release, already: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := c.a.State
			plan, err := PlanFire(c.a, c.last, c.existing, c.p)
			if c.a.State != before {
				t.Errorf("PlanFire changed the automation's state")
			}
			if c.err != nil || err != nil {
				if !errors.Is(err, c.err) || c.err == nil {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
				return
			}
			if plan.Result.AlreadyFired != c.already || plan.QueueRun != c.queue {
				t.Fatalf("plan = %+v, want already fired %v, queue %v", plan, c.already, c.queue)
			}
			if c.already {
				if plan.Insert || plan.Update {
					t.Errorf("a slot fired before writes: %+v", plan)
				}
				return
			}
			if f := plan.Result.Fire; f == nil || f.Outcome != c.outcome {
				t.Fatalf("fire = %+v, want outcome %s", f, c.outcome)
			}
			if plan.Insert == c.p.Release || plan.Update != c.p.Release {
				t.Errorf("insert %v update %v for release %v", plan.Insert, plan.Update, c.p.Release)
			}
			st := plan.State
			if c.queue && (st.LastRunID != "run_1" || st.Fires != c.a.State.Fires+1 || !st.InFlight()) {
				t.Errorf("state after queueing = %+v", st)
			}
			if c.outcome == store.FireSkipped && st.Skipped != c.a.State.Skipped+1 {
				t.Errorf("state after a skip = %+v", st)
			}
			if !c.p.Manual && !c.p.Release && !st.Cursor.Equal(store.Millis(c.p.Nominal)) {
				t.Errorf("cursor = %v, want the slot %v", st.Cursor, c.p.Nominal)
			}
			if c.p.Manual && !st.Cursor.Equal(c.a.State.Cursor) {
				t.Errorf("a manual fire moved the cursor to %v", st.Cursor)
			}
		})
	}
}

// A latest run that settled without the scheduler recording it is
// recorded before the next run replaces it, and its finish is kept
// between its start and the fire.
func TestPlanFireRecordsTheSettledRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		finished time.Time
		want     time.Time
	}{
		{name: "finished before the fire", finished: t0.Add(30 * time.Second), want: t0.Add(30 * time.Second)},
		{name: "finished after the fire's time", finished: slot.Add(time.Hour), want: store.Millis(fireAt(slot).Actual).Add(-time.Millisecond)},
		{name: "finished before its start", finished: t0.Add(-time.Hour), want: t0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := automation(store.OverlapBufferOne, true)
			last := &store.Run{ID: "run_0", Status: store.RunSucceeded, FinishedAt: c.finished}
			plan, err := PlanFire(a, last, nil, fireAt(slot))
			if err != nil {
				t.Fatal(err)
			}
			if got := settledState(a.State, last, store.Millis(fireAt(slot).Actual)); !got.LastFinish.Equal(c.want) || got.LastStatus != "succeeded" {
				t.Errorf("settled state = %+v, want finish %v", got, c.want)
			}
			if plan.Result.Fire.Outcome != store.FireQueued {
				t.Errorf("outcome %s, want queued: the run settled", plan.Result.Fire.Outcome)
			}
		})
	}
}
