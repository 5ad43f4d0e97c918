package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

func TestShouldPause(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		enabled  bool
		failures int64
		after    int
		want     bool
	}{
		{"below the limit", true, 4, 5, false},
		{"at the limit", true, 5, 5, true},
		{"past the limit", true, 7, 5, true},
		{"zero disables", true, 100, 0, false},
		{"already paused", false, 5, 5, false},
		{"no failures", true, 0, 1, false},
	}
	for _, c := range cases {
		if got := ShouldPause(c.enabled, c.failures, c.after); got != c.want {
			t.Errorf("%s: ShouldPause(%v, %d, %d) = %v, want %v", c.name, c.enabled, c.failures, c.after, got, c.want)
		}
	}
}

func TestPlanRecordCountsAndPauses(t *testing.T) {
	t.Parallel()
	pauseAt := t0.Add(time.Hour)
	pause := &store.PauseParams{After: 3, Note: "why", At: pauseAt}
	finish := func(s store.RunStatus) *store.RunFinish {
		return &store.RunFinish{RunID: "run_0", At: t0.Add(time.Second), Status: s}
	}
	cases := []struct {
		name     string
		failures int64
		inFlight bool
		enabled  bool
		p        store.RecordParams
		want     int64
		paused   bool
	}{
		{name: "failed run counts", failures: 1, inFlight: true, enabled: true, p: store.RecordParams{Finished: finish(store.RunFailed), Pause: pause}, want: 2},
		{name: "failed run reaching the limit pauses", failures: 2, inFlight: true, enabled: true, p: store.RecordParams{Finished: finish(store.RunFailed), Pause: pause}, want: 3, paused: true},
		{name: "failed fire reaching the limit pauses", failures: 2, enabled: true, p: store.RecordParams{Error: "target gone", FireFailed: true, Pause: pause}, want: 3, paused: true},
		{name: "succeeded run resets", failures: 2, inFlight: true, enabled: true, p: store.RecordParams{Finished: finish(store.RunSucceeded), Pause: pause}, want: 0},
		{name: "cancelled run leaves the count", failures: 2, inFlight: true, enabled: true, p: store.RecordParams{Finished: finish(store.RunCancelled), Pause: pause}, want: 2},
		{name: "a finish recorded twice counts once", failures: 2, enabled: true, p: store.RecordParams{Finished: finish(store.RunFailed), Pause: pause}, want: 2},
		{name: "an error that is not a fire does not count", failures: 2, enabled: true, p: store.RecordParams{Error: "cannot read files", Pause: pause}, want: 2},
		{name: "no pause rule: counts, never pauses", failures: 9, enabled: true, p: store.RecordParams{FireFailed: true}, want: 10},
		{name: "a paused automation is not paused again", failures: 5, enabled: false, p: store.RecordParams{FireFailed: true, Pause: pause}, want: 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := automation(store.OverlapSkip, c.inFlight)
			a.Enabled, a.State.Failures = c.enabled, c.failures
			next, paused, err := PlanRecord(a, c.p)
			if err != nil {
				t.Fatal(err)
			}
			if next.State.Failures != c.want || paused != c.paused {
				t.Fatalf("failures %d paused %v, want %d %v", next.State.Failures, paused, c.want, c.paused)
			}
			if a.State.Failures != c.failures {
				t.Fatal("PlanRecord changed its input")
			}
			switch {
			case paused && (next.Enabled || next.Note != "why" || next.Revision != a.Revision+1 || !next.UpdatedAt.Equal(pauseAt)):
				t.Fatalf("pause wrote %+v", next)
			case !paused && (next.Enabled != a.Enabled || next.Revision != a.Revision):
				t.Fatalf("no pause, yet the spec changed: %+v", next)
			}
		})
	}
}

func TestFireRecordsAnUnseenFailure(t *testing.T) {
	t.Parallel()
	a := automation(store.OverlapSkip, true)
	a.State.Failures = 1
	last := &store.Run{ID: "run_0", Status: store.RunFailed, FinishedAt: t0.Add(time.Second)}
	at := t0.Add(time.Minute)
	plan, err := PlanFire(a, last, nil, store.FireParams{Nominal: at, Actual: at, Run: &store.Run{ID: "run_1"}})
	if err != nil || plan.State.Failures != 2 {
		t.Fatalf("failures %d, %v; want 2", plan.State.Failures, err)
	}
}

func TestResumeResetsFailures(t *testing.T) {
	t.Parallel()
	cur := automation(store.OverlapSkip, false)
	cur.Enabled, cur.State.Failures = false, 5
	next := store.CloneAutomation(cur)
	if got := ApplyUpdate(cur, next, t0); got.State.Failures != 5 {
		t.Fatalf("an edit of a paused automation reset its failures: %d", got.State.Failures)
	}
	next.Enabled = true
	if got := ApplyUpdate(cur, next, t0); got.State.Failures != 0 {
		t.Fatalf("resume left failures at %d", got.State.Failures)
	}
}

func TestPauseNote(t *testing.T) {
	t.Parallel()
	n := PauseNote("nightly", 5, "run run_1 failed: "+strings.Repeat("x", 1000))
	for _, want := range []string{"5 failed fires in a row", "run run_1 failed", "mcp-host automations resume nightly"} {
		if !strings.Contains(n, want) {
			t.Errorf("note %q lacks %q", n, want)
		}
	}
	if len(n) > 600 {
		t.Errorf("note of %d bytes: the error is not clipped", len(n))
	}
	if n := PauseNote("k", 1, ""); !strings.Contains(n, "no error recorded") {
		t.Errorf("note without an error: %q", n)
	}
}
