package automations

import (
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

func TestIntervalIsMeasuredFromCompletion(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.create(Spec{Key: "tidy", Every: "10m"})

	if next := e.step(); !next.Equal(t0.Add(10 * time.Minute)) {
		t.Fatalf("first tick due at %v, want created + 10m", next.Sub(t0))
	}
	e.advanceTo(t0.Add(10 * time.Minute))
	fs := e.fires(a.ID)
	if len(fs) != 1 || !fs[0].Nominal.Equal(t0.Add(10*time.Minute)) || fs[0].Outcome != store.FireQueued {
		t.Fatalf("fires after the first tick: %v", nominals(fs))
	}
	// The run takes 3 minutes. Ten minutes after the fire it is still the
	// completion that counts: nothing fires at 20m.
	e.runs.finish(fs[0].RunID, t0.Add(13*time.Minute))
	if next := e.advanceTo(t0.Add(20 * time.Minute)); !next.Equal(t0.Add(23 * time.Minute)) {
		t.Fatalf("next tick at %v, want the finish (13m) + 10m", next.Sub(t0))
	}
	if n := len(e.fires(a.ID)); n != 1 {
		t.Fatalf("%d fires at 20m, want 1", n)
	}
	st := e.get(a.ID).State
	if !st.LastFinish.Equal(t0.Add(13*time.Minute)) || st.LastStatus != "succeeded" || !st.NextDue.Equal(t0.Add(23*time.Minute)) {
		t.Fatalf("history: %+v", st)
	}
	e.advanceTo(t0.Add(23 * time.Minute))
	if fs := e.fires(a.ID); len(fs) != 2 || !fs[1].Nominal.Equal(t0.Add(23*time.Minute)) {
		t.Fatalf("fires: %v, want a second at 23m", nominals(fs))
	}
	// While that run is in flight, nothing is due, however long it takes.
	if next := e.advanceTo(t0.Add(2 * time.Hour)); !next.IsZero() || len(e.fires(a.ID)) != 2 {
		t.Fatalf("next %v, %d fires while a run is in flight", next, len(e.fires(a.ID)))
	}
}

func TestIntervalCadenceSurvivesARestart(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.create(Spec{Key: "tidy", Every: "30m"})
	e.advanceTo(t0.Add(30 * time.Minute))
	fs := e.fires(a.ID)
	e.runs.finish(fs[0].RunID, t0.Add(31*time.Minute+17*time.Second))
	e.advanceTo(t0.Add(32 * time.Minute)) // records the finish

	// The process restarts: a new scheduler, with nothing in memory, reads
	// the recorded last finish and keeps the cadence.
	e.sched = e.newScheduler()
	want := t0.Add(61*time.Minute + 17*time.Second)
	if next := e.advanceTo(t0.Add(40 * time.Minute)); !next.Equal(want) {
		t.Fatalf("after the restart the next tick is at %v, want %v", next.Sub(t0), want.Sub(t0))
	}
	e.advanceTo(want.Add(-time.Second))
	if n := len(e.fires(a.ID)); n != 1 {
		t.Fatalf("%d fires before the tick", n)
	}
	e.advanceTo(want)
	fs = e.fires(a.ID)
	if len(fs) != 2 || !fs[1].Nominal.Equal(want) || fs[1].Lag != 0 {
		t.Fatalf("fires: %v (lag %v), want one at %v", nominals(fs), fs[len(fs)-1].Lag, want.Sub(t0))
	}
}

func TestMissedIntervalTicksDoNotQueue(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.create(Spec{Key: "tidy", Every: "10m"})
	e.advanceTo(t0.Add(10 * time.Minute))
	e.runs.finish(e.fires(a.ID)[0].RunID, t0.Add(11*time.Minute))
	e.advanceTo(t0.Add(12 * time.Minute))

	// No scheduler ran for an hour: the tick due at 21m is overdue and
	// fires once, late; the five ticks it stood for are counted, not run.
	e.advanceTo(t0.Add(76 * time.Minute))
	fs := e.fires(a.ID)
	if len(fs) != 2 || !fs[1].Nominal.Equal(t0.Add(21*time.Minute)) || fs[1].Lag != 55*time.Minute {
		t.Fatalf("fires: %v", nominals(fs))
	}
	if st := e.get(a.ID).State; st.Missed != 5 || st.Fires != 2 {
		t.Fatalf("missed %d fires %d, want 5 and 2", st.Missed, st.Fires)
	}
	e.step()
	if n := e.runCount(); n != 2 {
		t.Fatalf("%d runs, want 2", n)
	}
}

func TestFixedRateIntervalWithOverlapAllow(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.create(Spec{Key: "beat", Every: "1m", Overlap: "allow"})
	for m := 1; m <= 3; m++ {
		e.advanceTo(t0.Add(time.Duration(m)*time.Minute + 500*time.Millisecond))
	}
	// Down for 10 minutes: one overdue tick fires, on the grid; nine wait
	// for nobody.
	next := e.advanceTo(t0.Add(13*time.Minute + 200*time.Millisecond))
	fs := e.fires(a.ID)
	want := []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute, 13 * time.Minute}
	if len(fs) != len(want) {
		t.Fatalf("fires %v", nominals(fs))
	}
	for i, f := range fs {
		if !f.Nominal.Equal(t0.Add(want[i])) || f.Outcome != store.FireQueued {
			t.Fatalf("fires %v, want nominals %v", nominals(fs), want)
		}
	}
	if st := e.get(a.ID).State; st.Missed != 9 || !next.Equal(t0.Add(14*time.Minute)) {
		t.Fatalf("missed %d, next %v", st.Missed, next.Sub(t0))
	}
}
