package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// testPauseAfterFailures: failed runs and failed fires count in a row, a
// succeeded run resets the count, and the record that reaches Pause.After
// disables the automation (revision and version moved) with its note and
// enqueues the notification in the same write, once; resuming resets the
// count.
func testPauseAfterFailures(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreateAutomation(t, s, newTestAutomation("aut_p", "flaky"))
	pauseAt := autT0.Add(time.Hour)
	pause := func() *store.PauseParams {
		return &store.PauseParams{After: 3, Note: "paused: 3 in a row", At: pauseAt, Notify: []*store.Notification{
			{ID: "automation.paused:aut_p:1/webhook", Kind: "automation.paused", Payload: json.RawMessage(`{"event":"automation.paused"}`)},
		}}
	}
	fire := func(i int, status store.RunStatus) *store.Automation {
		t.Helper()
		nominal := autT0.Add(time.Duration(i) * time.Minute)
		runID := "run_p" + string(rune('a'+i))
		if _, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_p", Nominal: nominal, Actual: nominal, Run: newFireRun(runID, "aut_p", nominal)}); err != nil {
			t.Fatalf("fire %d: %v", i, err)
		}
		a, err := s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_p", Finished: &store.RunFinish{RunID: runID, At: nominal.Add(time.Second), Status: status}, Pause: pause()})
		if err != nil {
			t.Fatalf("record run %d: %v", i, err)
		}
		return a
	}
	if a := fire(1, store.RunFailed); a.State.Failures != 1 || !a.Enabled {
		t.Fatalf("after one failed run: failures %d enabled %v", a.State.Failures, a.Enabled)
	}
	if a := fire(2, store.RunCancelled); a.State.Failures != 1 {
		t.Fatalf("a cancelled run changed the count: %d", a.State.Failures)
	}
	if a := fire(3, store.RunSucceeded); a.State.Failures != 0 {
		t.Fatalf("a succeeded run left the count at %d", a.State.Failures)
	}
	fire(4, store.RunFailed)
	a, err := s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_p", Error: "fire: target gone", FireFailed: true, Pause: pause()})
	if err != nil || a.State.Failures != 2 || !a.Enabled || a.State.LastError != "fire: target gone" {
		t.Fatalf("after a failed fire: %+v, %v", a, err)
	}
	if ns, _ := s.Notifications(ctx, 10); len(ns) != 0 {
		t.Fatalf("notified before the pause: %+v", ns)
	}
	v0, _ := s.AutomationsVersion(ctx)
	a = fire(5, store.RunFailed)
	if a.Enabled || a.Note != "paused: 3 in a row" || a.Revision != 2 || a.State.Failures != 3 {
		t.Fatalf("not paused at 3 failures: %+v", a)
	}
	got := mustGetAutomation(t, s, "aut_p")
	if got.Enabled || got.Note != a.Note || got.Revision != 2 || !got.UpdatedAt.Equal(pauseAt) || got.State.LastStatus != "failed" {
		t.Fatalf("stored pause: %+v", got)
	}
	if v1, _ := s.AutomationsVersion(ctx); v1 == v0 {
		t.Fatal("the pause did not move the automations version")
	}
	// A paused automation is not paused again, nor notified twice.
	if a, err := s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_p", Error: "again", FireFailed: true, Pause: pause()}); err != nil || a.Revision != 2 {
		t.Fatalf("record on the paused automation: %+v, %v", a, err)
	}
	ns, err := s.Notifications(ctx, 10)
	if err != nil || len(ns) != 1 || ns[0].ID != "automation.paused:aut_p:1/webhook" || ns[0].State != store.NotifyPending {
		t.Fatalf("notifications after the pause: %+v, %v", ns, err)
	}
	// Resuming gives a fresh count.
	got = mustGetAutomation(t, s, "aut_p")
	got.Enabled, got.Note = true, ""
	if err := s.UpdateAutomation(ctx, got, 2); err != nil {
		t.Fatal(err)
	}
	if got := mustGetAutomation(t, s, "aut_p"); !got.Enabled || got.State.Failures != 0 {
		t.Fatalf("after resume: enabled %v failures %d", got.Enabled, got.State.Failures)
	}
	// A bad notification refuses the whole record: nothing is paused.
	for range 3 {
		bad := pause()
		bad.Notify[0].Payload = json.RawMessage(`{not json`)
		if _, err := s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_p", FireFailed: true, Pause: bad}); err != nil {
			if got := mustGetAutomation(t, s, "aut_p"); !got.Enabled || got.State.Failures != 2 {
				t.Fatalf("a refused pause wrote: %+v", got)
			}
			return
		}
	}
	t.Fatal("a pause with a notification that is not JSON was accepted")
}
