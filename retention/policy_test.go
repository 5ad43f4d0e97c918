package retention

import (
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestSelector(t *testing.T) {
	t.Parallel()
	old := now.Add(-31 * 24 * time.Hour)
	run := func(target, auto string, st store.RunStatus, finished time.Time) *store.Run {
		return &store.Run{Target: target, Status: st, Trigger: store.Trigger{AutomationID: auto}, CreatedAt: finished, FinishedAt: finished}
	}
	cases := []struct {
		name   string
		policy Policy
		runs   []*store.Run // newest first
		want   []bool
	}{
		{"old settled beyond the keep go", Policy{MaxAge: 30 * 24 * time.Hour, KeepPerTarget: 1},
			[]*store.Run{run("a", "", store.RunSucceeded, old), run("a", "", store.RunFailed, old), run("a", "", store.RunCancelled, old)},
			[]bool{false, true, true}},
		{"young runs stay", Policy{MaxAge: 30 * 24 * time.Hour},
			[]*store.Run{run("a", "", store.RunSucceeded, now.Add(-29*24*time.Hour)), run("a", "", store.RunSucceeded, old)},
			[]bool{false, true}},
		{"active runs never go and still count", Policy{MaxAge: time.Hour, KeepPerTarget: 1},
			[]*store.Run{run("a", "", store.RunWaiting, old), run("a", "", store.RunRunning, old), run("a", "", store.RunQueued, old), run("a", "", store.RunSucceeded, old)},
			[]bool{false, false, false, true}},
		{"keep per target is per target", Policy{MaxAge: time.Hour, KeepPerTarget: 1},
			[]*store.Run{run("a", "", store.RunSucceeded, old), run("b", "", store.RunSucceeded, old), run("a", "", store.RunSucceeded, old)},
			[]bool{false, false, true}},
		{"keep per automation keeps beyond the target's", Policy{MaxAge: time.Hour, KeepPerTarget: 1, KeepPerAutomation: 1},
			[]*store.Run{run("a", "x", store.RunSucceeded, old), run("a", "y", store.RunSucceeded, old), run("a", "x", store.RunSucceeded, old), run("a", "", store.RunSucceeded, old)},
			[]bool{false, false, true, true}},
		{"zero max age keeps everything", Policy{},
			[]*store.Run{run("a", "", store.RunSucceeded, old.AddDate(-5, 0, 0))},
			[]bool{false}},
		{"no finish time: the last change counts", Policy{MaxAge: time.Hour},
			[]*store.Run{{Target: "a", Status: store.RunFailed, UpdatedAt: now.Add(-30 * time.Minute)}, {Target: "a", Status: store.RunFailed, UpdatedAt: old}},
			[]bool{false, true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sel := NewSelector(c.policy, now)
			for i, r := range c.runs {
				if got := sel.Delete(r); got != c.want[i] {
					t.Errorf("run %d (%s %s %s): delete = %v, want %v", i, r.Target, r.Trigger.AutomationID, r.Status, got, c.want[i])
				}
			}
		})
	}
}

func TestDefaultPolicy(t *testing.T) {
	t.Parallel()
	if p := DefaultPolicy(); p.MaxAge != 30*24*time.Hour || p.KeepPerTarget != 100 || p.KeepPerAutomation != 100 {
		t.Fatalf("DefaultPolicy() = %+v", p)
	}
}
