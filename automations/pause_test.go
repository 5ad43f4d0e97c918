package automations

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/notify"
	"github.com/cairnhq/cairn/store"
)

// pausing makes e's scheduler pause after failures in a row, enqueuing a
// webhook row per pause; the returned counter counts OnPause calls.
func (e *env) pausing(after int) *atomic.Int64 {
	var paused atomic.Int64
	settings := notify.Settings{Webhook: &notify.WebhookSettings{URL: "http://127.0.0.1:1/hook"}}
	e.sched = New(Config{
		Store: e.store, LocksDir: e.svc.LocksDir, Targets: e.targets, Workspace: e.dir, Clock: e.clock, Runs: e.runs,
		PauseAfter: after,
		PauseNotify: func(a *store.Automation, note string, at time.Time) []*store.Notification {
			return settings.AutomationPaused(notify.Workspace{Root: e.dir, ID: "ws"}, a, note, at)
		},
		OnPause: func(*store.Automation) { paused.Add(1) },
	})
	return &paused
}

// settle makes run id read as settled with status at at.
func (f *fakeRuns) settle(id string, status store.RunStatus, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done[id] = store.Run{Status: status, FinishedAt: at}
}

// fireAndSettle advances to a's next due time, checks that it fired, and
// settles the run it queued with status a second later.
func (e *env) fireAndSettle(a *store.Automation, status store.RunStatus) {
	e.t.Helper()
	before := e.get(a.ID).State.Fires
	due := e.get(a.ID).State.NextDue
	e.advanceTo(due)
	st := e.get(a.ID).State
	if st.Fires != before+1 || !st.InFlight() {
		e.t.Fatalf("no fire at %v: %+v", due.Sub(t0), st)
	}
	e.runs.settle(st.LastRunID, status, due.Add(time.Second))
	e.advanceTo(due.Add(time.Second))
}

func (e *env) notifications() []*store.Notification {
	e.t.Helper()
	ns, err := e.store.Notifications(e.ctx, 100)
	if err != nil {
		e.t.Fatal(err)
	}
	return ns
}

func TestFailingRunsPauseTheAutomation(t *testing.T) {
	t.Parallel()
	e := setup(t)
	paused := e.pausing(5)
	a := e.create(Spec{Key: "ping", Every: "1m"})
	e.step()
	for i := range 4 {
		e.fireAndSettle(a, store.RunFailed)
		if got := e.get(a.ID); !got.Enabled || got.State.Failures != int64(i+1) {
			t.Fatalf("after %d failed runs: enabled %v failures %d", i+1, got.Enabled, got.State.Failures)
		}
	}
	if ns := e.notifications(); len(ns) != 0 {
		t.Fatalf("notified before the pause: %d rows", len(ns))
	}
	e.fireAndSettle(a, store.RunFailed)
	got := e.get(a.ID)
	if got.Enabled || got.State.Failures != 5 {
		t.Fatalf("after 5 failed runs: enabled %v failures %d", got.Enabled, got.State.Failures)
	}
	for _, want := range []string{"5 failed fires in a row", "failed", "mcp-host automations resume ping"} {
		if !strings.Contains(got.Note, want) {
			t.Errorf("note %q lacks %q", got.Note, want)
		}
	}
	// The 6th due time does not fire, and the pause is told once.
	fires := got.State.Fires
	for _, at := range []time.Duration{time.Minute, time.Hour} {
		e.advanceTo(e.clock.Now().Add(at))
	}
	if n := e.get(a.ID).State.Fires; n != fires {
		t.Fatalf("a paused automation fired: %d fires, want %d", n, fires)
	}
	ns := e.notifications()
	if len(ns) != 1 || ns[0].Kind != notify.EventAutomationPaused || !strings.Contains(string(ns[0].Payload), `"key":"ping"`) {
		t.Fatalf("notifications: %+v", ns)
	}
	if n := paused.Load(); n != 1 {
		t.Fatalf("OnPause told %d times", n)
	}
	// Resumed, it fires again with a fresh count.
	if _, err := e.svc.Resume(e.ctx, "ping"); err != nil {
		t.Fatal(err)
	}
	if got := e.get(a.ID); !got.Enabled || got.Note != "" || got.State.Failures != 0 {
		t.Fatalf("after resume: %+v", got)
	}
	// Its interval passed long ago: the first pass fires at once.
	e.step()
	st := e.get(a.ID).State
	if st.Fires != fires+1 || !st.InFlight() {
		t.Fatalf("no fire after resume: %+v", st)
	}
	e.runs.settle(st.LastRunID, store.RunSucceeded, e.clock.Now())
	e.step()
	if got := e.get(a.ID); !got.Enabled || got.State.LastStatus != "succeeded" || got.State.Failures != 0 {
		t.Fatalf("after the resumed run: %+v", got)
	}
}

func TestFireErrorsCountWithFailedRunsAndSuccessResets(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.pausing(3)
	a := e.create(Spec{Key: "flaky", Every: "1m"})
	e.step()
	e.fireAndSettle(a, store.RunFailed)
	e.fireAndSettle(a, store.RunFailed)
	e.fireAndSettle(a, store.RunSucceeded) // resets
	e.fireAndSettle(a, store.RunFailed)
	if got := e.get(a.ID); !got.Enabled || got.State.Failures != 1 {
		t.Fatalf("a success did not reset: enabled %v failures %d", got.Enabled, got.State.Failures)
	}
	// The target breaks: each due time's fire errors and counts.
	e.targets.failing.Store(true)
	due := e.get(a.ID).State.NextDue
	e.advanceTo(due)
	if got := e.get(a.ID); !got.Enabled || got.State.Failures != 2 || got.State.LastError == "" {
		t.Fatalf("after a failed fire: %+v", got.State)
	}
	e.advanceTo(due.Add(time.Minute)) // retried a period later: the third failure
	got := e.get(a.ID)
	if got.Enabled || got.State.Failures != 3 || !strings.Contains(got.Note, "target is broken") {
		t.Fatalf("not paused after 3 failures: enabled %v failures %d note %q", got.Enabled, got.State.Failures, got.Note)
	}
	e.targets.failing.Store(false)
	e.advanceTo(due.Add(10 * time.Minute))
	if n := len(e.notifications()); n != 1 {
		t.Fatalf("%d notifications, want 1", n)
	}
	if n := e.get(a.ID).State.Fires; n != 4 {
		t.Fatalf("%d fires, want the 4 before the pause", n)
	}
}

func TestPauseAfterZeroNeverPauses(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.pausing(0)
	a := e.create(Spec{Key: "noisy", Every: "1m"})
	e.step()
	for range 6 {
		e.fireAndSettle(a, store.RunFailed)
	}
	if got := e.get(a.ID); !got.Enabled || got.State.Failures != 6 || len(e.notifications()) != 0 {
		t.Fatalf("paused with the rule off: %+v", got)
	}
}

// A cron whose fires error loses each slot (counted missed) and counts
// each towards the pause.
func TestCronFireErrorsPause(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.pausing(2)
	a := e.create(Spec{Key: "minutely", Cron: "* * * * *", TZ: "UTC"})
	e.targets.failing.Store(true)
	e.advanceTo(t0.Add(time.Minute))
	if got := e.get(a.ID); !got.Enabled || got.State.Failures != 1 || got.State.Missed != 1 {
		t.Fatalf("after one failed slot: %+v", got.State)
	}
	e.advanceTo(t0.Add(2 * time.Minute))
	if got := e.get(a.ID); got.Enabled || !strings.Contains(got.Note, "target is broken") {
		t.Fatalf("not paused after two failed slots: enabled %v note %q", got.Enabled, got.Note)
	}
	e.targets.failing.Store(false)
	e.advanceTo(t0.Add(3 * time.Minute))
	if got := e.get(a.ID); got.State.Fires != 0 || len(e.notifications()) != 1 {
		t.Fatalf("paused cron: %d fires, %d notifications", got.State.Fires, len(e.notifications()))
	}
}
