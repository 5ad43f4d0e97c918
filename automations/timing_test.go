package automations

import (
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// TestOneSecondIntervalNeverFiresEarly: runs finishing at instants that
// are not whole seconds; the next fire never comes less than a second after
// the recorded completion, and comes at the first whole second after it.
func TestOneSecondIntervalNeverFiresEarly(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.create(Spec{Key: "tick", Every: "1s"})
	e.advanceTo(t0.Add(time.Second))
	offsets := []time.Duration{300 * time.Millisecond, 999 * time.Millisecond, 1 * time.Millisecond, 0, 500 * time.Millisecond}
	for i, off := range offsets {
		fs := e.fires(a.ID)
		if len(fs) != i+1 {
			t.Fatalf("round %d: %d fires, want %d", i, len(fs), i+1)
		}
		finish := e.clock.Now().Truncate(time.Second).Add(time.Second + off)
		e.runs.finish(fs[i].RunID, finish)
		e.advanceTo(finish) // records the finish
		next := e.advanceTo(finish.Add(time.Second - time.Millisecond))
		if n := len(e.fires(a.ID)); n != i+1 {
			t.Fatalf("round %d: fired %v after the finish, under 1s", i, e.clock.Now().Sub(finish))
		}
		if next.Sub(finish) < time.Second || next.Sub(finish) >= 2*time.Second {
			t.Fatalf("round %d: next due %v after the finish, want 1s to 2s", i, next.Sub(finish))
		}
		e.advanceTo(next)
		fs = e.fires(a.ID)
		if len(fs) != i+2 {
			t.Fatalf("round %d: no fire at %v after the finish", i, next.Sub(finish))
		}
		if got := fs[i+1].Actual.Sub(finish); got < time.Second {
			t.Fatalf("round %d: fired %v after the finish", i, got)
		}
	}
}

// TestIntervalKeepsCadenceAfterABackwardStep: the wall clock goes back an
// hour between two ticks; the interval fires every 10 s all the same, for
// both a delay measured from completion and a fixed rate.
func TestIntervalKeepsCadenceAfterABackwardStep(t *testing.T) {
	t.Parallel()
	for _, overlap := range []string{"skip", "allow"} {
		t.Run(overlap, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			a := e.create(Spec{Key: "tick", Every: "10s", Overlap: overlap})
			e.advanceTo(t0.Add(10 * time.Second))
			fs := e.fires(a.ID)
			if len(fs) != 1 {
				t.Fatalf("%d fires at 10s", len(fs))
			}
			e.runs.finish(fs[0].RunID, t0.Add(10*time.Second))
			e.advanceTo(t0.Add(15 * time.Second))
			// The clock steps back an hour, 5 s after the finish.
			at := t0.Add(15*time.Second - time.Hour)
			next := e.advanceTo(at)
			// The tick across the step is neither early (5 s passed before
			// it, so at least 5 s more) nor late by more than every
			// (measured from the step: the scheduler reads the clock
			// shifted back to the recorded instant), never by the hour.
			if next.IsZero() || next.Sub(at) < 5*time.Second || next.Sub(at) > 10*time.Second {
				t.Fatalf("after the step the next tick is %v away, want 5s to 10s", next.Sub(at))
			}
			for round := 0; round < 3; round++ {
				before := len(e.fires(a.ID))
				e.advanceTo(next)
				fs = e.fires(a.ID)
				if len(fs) != before+1 {
					t.Fatalf("round %d: no fire at %v (after the step)", round, next.Sub(at))
				}
				// The run takes a second; skip measures from its
				// finish, allow from the tick.
				last := fs[len(fs)-1]
				from, finish := next, next.Add(time.Second)
				if overlap == "skip" {
					from = finish
				}
				e.runs.finish(last.RunID, finish)
				next = e.advanceTo(finish)
				if gap := next.Sub(from); gap < 10*time.Second || gap > 11*time.Second {
					t.Fatalf("round %d: next tick %v after the last fire or finish, want 10s to 11s", round, gap)
				}
			}
		})
	}
}

// TestBufferOneRecordsItsRelease: a fire buffer_one held at 2m and
// released at 3m31s is recorded at its release, 91 s late.
func TestBufferOneRecordsItsRelease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.create(Spec{Key: "k", Cron: "* * * * *", TZ: "UTC", Overlap: "buffer_one"})
	e.advanceTo(t0.Add(time.Minute))
	e.advanceTo(t0.Add(2 * time.Minute))
	if f := e.fires(a.ID)[1]; f.Outcome != store.FireBuffered || f.Lag != 0 {
		t.Fatalf("the second fire: %+v, want buffered at its slot", f)
	}
	e.runs.finish(e.fires(a.ID)[0].RunID, t0.Add(3*time.Minute+30*time.Second))
	release := t0.Add(3*time.Minute + 31*time.Second)
	e.advanceTo(release)
	f := e.fires(a.ID)[1]
	if f.Outcome != store.FireQueued || !f.Actual.Equal(release) || f.Lag != 91*time.Second {
		t.Fatalf("released fire: %+v, want actual %v and lag 91s", f, release.Sub(t0))
	}
}
