package automations

import (
	"slices"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

func TestCronMissedPolicies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		missed     string
		wantFires  []time.Duration // nominal offsets from t0
		wantMissed int64
	}{
		// Slots at 12:10 ... 13:00 passed while no scheduler ran; at 13:05
		// the latest (13:00) is 5 minutes late, past the one-minute grace.
		{missed: "skip", wantFires: nil, wantMissed: 6},
		{missed: "once", wantFires: []time.Duration{time.Hour}, wantMissed: 5},
	} {
		t.Run(tc.missed, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			a := e.create(Spec{Key: "poll", Cron: "*/10 * * * *", TZ: "UTC", Missed: tc.missed})
			e.advanceTo(t0.Add(65 * time.Minute))
			e.step() // again: the catch-up fires once, not twice
			fs := e.fires(a.ID)
			if len(fs) != len(tc.wantFires) {
				t.Fatalf("fires: %v, want %v", nominals(fs), tc.wantFires)
			}
			for i, f := range fs {
				if !f.Nominal.Equal(t0.Add(tc.wantFires[i])) {
					t.Fatalf("fire %d at %v, want %v", i, f.Nominal.Sub(t0), tc.wantFires[i])
				}
			}
			st := e.get(a.ID).State
			if st.Missed != tc.wantMissed || !st.NextDue.Equal(t0.Add(70*time.Minute)) {
				t.Fatalf("missed %d next %v, want %d and 70m", st.Missed, st.NextDue.Sub(t0), tc.wantMissed)
			}
			// Back on time: the 13:10 slot fires (its run, if any, settled).
			for _, f := range fs {
				e.runs.finish(f.RunID, t0.Add(66*time.Minute))
			}
			e.advanceTo(t0.Add(70*time.Minute + 2*time.Second))
			if fs := e.fires(a.ID); len(fs) != len(tc.wantFires)+1 || !fs[len(fs)-1].Nominal.Equal(t0.Add(70*time.Minute)) || fs[len(fs)-1].Lag != 2*time.Second {
				t.Fatalf("fires: %v", nominals(fs))
			}
		})
	}
}

// The overlap policies, with each slot fired by the pass after it and with
// the slots prepared ahead and fired in batches.
func TestCronOverlapPolicies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		overlap  string
		outcomes []string
		runs     int
	}{
		{overlap: "skip", outcomes: []string{"queued", "skipped", "skipped", "queued"}, runs: 2},
		{overlap: "allow", outcomes: []string{"queued", "queued", "queued", "queued"}, runs: 4},
		// The second slot is held and queued once the first run settles.
		{overlap: "buffer_one", outcomes: []string{"queued", "queued", "skipped", "queued"}, runs: 3},
	} {
		for _, prepared := range []bool{false, true} {
			name := tc.overlap
			if prepared {
				name += "/prepared"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				e := setup(t)
				var cs *countingStore
				slot, wake := func(at time.Time) { e.advanceTo(at) }, func(at time.Time) { e.advanceTo(at) }
				if prepared {
					cs, _ = e.counted()
					slot, wake = e.slot, func(at time.Time) { e.tick(at) }
				}
				a := e.create(Spec{Key: "k", Cron: "* * * * *", TZ: "UTC", Overlap: tc.overlap})
				for m := 1; m <= 3; m++ {
					slot(t0.Add(time.Duration(m) * time.Minute))
				}
				// The first run settles between the third and fourth slots.
				e.runs.finish(e.fires(a.ID)[0].RunID, t0.Add(3*time.Minute+30*time.Second))
				wake(t0.Add(3*time.Minute + 31*time.Second))
				if tc.overlap == "buffer_one" {
					f := e.fires(a.ID)[1]
					if f.Outcome != store.FireQueued || !f.Nominal.Equal(t0.Add(2*time.Minute)) {
						t.Fatalf("the buffered fire was not released: %+v", f)
					}
					e.runs.finish(f.RunID, t0.Add(3*time.Minute+40*time.Second))
				}
				slot(t0.Add(4 * time.Minute))
				var got []string
				for _, f := range e.fires(a.ID) {
					got = append(got, f.Outcome)
				}
				if !slices.Equal(got, tc.outcomes) {
					t.Fatalf("outcomes %v, want %v", got, tc.outcomes)
				}
				if n := e.runCount(); n != tc.runs {
					t.Fatalf("%d runs, want %d", n, tc.runs)
				}
				if cs != nil {
					if batches, _ := cs.counts(); len(batches) < 3 {
						t.Fatalf("batches %v: the slots were not fired as prepared", batches)
					}
				}
			})
		}
	}
}

func TestBrokenTargetCountsTheSlotAsMissed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.create(Spec{Key: "k", Cron: "* * * * *", TZ: "UTC"})
	e.targets.failing.Store(true)
	e.advanceTo(t0.Add(time.Minute))
	st := e.get(a.ID).State
	if st.Missed != 1 || st.LastError == "" || !st.Cursor.Equal(t0.Add(time.Minute)) || e.runCount() != 0 {
		t.Fatalf("state after a failed fire: %+v", st)
	}
	e.targets.failing.Store(false)
	e.advanceTo(t0.Add(2 * time.Minute))
	if st := e.get(a.ID).State; st.Fires != 1 || st.LastError != "" {
		t.Fatalf("state after recovery: %+v", st)
	}
}
