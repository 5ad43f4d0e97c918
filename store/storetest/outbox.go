package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

func testOutbox(t *testing.T, newStore NewFunc) {
	runCases(t, newStore, []storeCase{
		{"enqueue is idempotent", testEnqueueIdempotent},
		{"claim, retry, send", testOutboxClaimRetrySend},
		{"enqueued with the run's write", testOutboxWithRunWrites},
		{"prune after keep", testOutboxPrune},
	})
}

func note(id string) *store.Notification {
	return &store.Notification{ID: id, Kind: "run.failed", Payload: json.RawMessage(`{"event":"run.failed"}`)}
}

func testEnqueueIdempotent(t *testing.T, s store.Store) {
	ctx := context.Background()
	if added, err := s.EnqueueNotification(ctx, note("ev1")); err != nil || !added {
		t.Fatalf("enqueue: %v %v", added, err)
	}
	if added, err := s.EnqueueNotification(ctx, note("ev1")); err != nil || added {
		t.Fatalf("enqueue again: %v %v, want not added", added, err)
	}
	bad := note("ev2")
	bad.Payload = json.RawMessage(`{not json`)
	if _, err := s.EnqueueNotification(ctx, bad); err == nil {
		t.Fatal("a payload that is not JSON was accepted")
	}
	if _, err := s.EnqueueNotification(ctx, &store.Notification{Kind: "x", Payload: json.RawMessage(`{}`)}); err == nil {
		t.Fatal("a notification without an id was accepted")
	}
	ns, err := s.Notifications(ctx, 10)
	if err != nil || len(ns) != 1 || ns[0].ID != "ev1" || ns[0].State != store.NotifyPending || string(ns[0].Payload) != `{"event":"run.failed"}` {
		t.Fatalf("notifications: %+v %v", ns, err)
	}
}

func testOutboxClaimRetrySend(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if _, err := s.EnqueueNotification(ctx, note(id)); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().Add(time.Second)
	got, err := s.ClaimNotifications(ctx, store.ClaimNotificationsParams{Claim: "c1", Now: now, Lease: time.Minute, Limit: 1})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim: %+v %v", got, err)
	}
	first := got[0].ID
	// The claimed row is not claimed twice while the lease holds.
	got, err = s.ClaimNotifications(ctx, store.ClaimNotificationsParams{Claim: "c2", Now: now, Lease: time.Minute, Limit: 10})
	if err != nil || len(got) != 1 || got[0].ID == first {
		t.Fatalf("second claim: %+v %v", got, err)
	}
	second := got[0].ID
	// A failed attempt puts it back for later.
	retry := now.Add(10 * time.Second)
	if err := s.RecordNotification(ctx, store.NotificationOutcome{ID: first, Claim: "c1", Now: now, Error: "HTTP 500", NextAt: retry}); err != nil {
		t.Fatal(err)
	}
	if next, ok, err := s.NextNotification(ctx); err != nil || !ok || !next.Before(retry) {
		t.Fatalf("next notification: %v %v %v; want the unclaimed one, due before %v", next, ok, err, retry)
	}
	if err := s.RecordNotification(ctx, store.NotificationOutcome{ID: first, Claim: "c1", Now: now, Sent: true}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("record without the claim: %v, want ErrNotOwner", err)
	}
	if got, _ := s.ClaimNotifications(ctx, store.ClaimNotificationsParams{Claim: "c3", Now: now, Lease: time.Minute, Limit: 10}); len(got) != 0 {
		t.Fatalf("claimed before its retry time: %+v", got)
	}
	got, err = s.ClaimNotifications(ctx, store.ClaimNotificationsParams{Claim: "c3", Now: retry, Lease: time.Minute, Limit: 10})
	if err != nil || len(got) != 1 || got[0].ID != first || got[0].Attempts != 1 || got[0].LastError != "HTTP 500" {
		t.Fatalf("claim at the retry time: %+v %v", got, err)
	}
	if err := s.RecordNotification(ctx, store.NotificationOutcome{ID: first, Claim: "c3", Now: retry, Sent: true}); err != nil {
		t.Fatal(err)
	}
	// A lease that ran out (its sender died) lets another sender claim.
	later := now.Add(2 * time.Minute)
	got, err = s.ClaimNotifications(ctx, store.ClaimNotificationsParams{Claim: "c4", Now: later, Lease: time.Minute, Limit: 10})
	if err != nil || len(got) != 1 || got[0].ID != second {
		t.Fatalf("claim after the lease: %+v %v", got, err)
	}
	if err := s.RecordNotification(ctx, store.NotificationOutcome{ID: second, Claim: "c2", Now: later, Sent: true}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("record by the expired claim: %v, want ErrNotOwner", err)
	}
	if err := s.RecordNotification(ctx, store.NotificationOutcome{ID: second, Claim: "c4", Now: later, Error: "gave up", Drop: true}); err != nil {
		t.Fatal(err)
	}
	ns, _ := s.Notifications(ctx, 10)
	states := map[string]string{}
	for _, n := range ns {
		states[n.ID] = n.State
	}
	if states[first] != store.NotifySent || states[second] != store.NotifyDropped {
		t.Fatalf("states: %v", states)
	}
	if _, ok, err := s.NextNotification(ctx); err != nil || ok {
		t.Fatalf("next notification with none pending: %v %v", ok, err)
	}
	if got, _ := s.ClaimNotifications(ctx, store.ClaimNotificationsParams{Claim: "c5", Now: later.Add(time.Hour), Lease: time.Minute, Limit: 10}); len(got) != 0 {
		t.Fatalf("sent or dropped rows were claimed: %+v", got)
	}
	if err := s.RecordNotification(ctx, store.NotificationOutcome{ID: "nope", Claim: "c"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("record of an unknown id: %v", err)
	}
}

func testOutboxWithRunWrites(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := mustCreate(t, s, &store.Run{ID: "run_n"})
	mustClaim(t, s, r.ID, "c")
	q := &store.Question{ID: "q1", Text: "go?", Kind: "ask", Step: "s", Position: 1}
	if _, err := s.StartStep(ctx, store.StepStart{RunID: r.ID, Claim: "c", Path: "s", Position: 1, Kind: "ask", Now: tNow}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ParkRun(ctx, store.ParkParams{ID: r.ID, Claim: "c", Question: q, Now: tNow, Notify: []*store.Notification{note("run.waiting:run_n:q1")}}); err != nil {
		t.Fatal(err)
	}
	// A refused settle enqueues nothing.
	if _, err := s.SettleRun(ctx, store.SettleParams{ID: r.ID, Claim: "wrong", Status: store.RunFailed, Now: tNow, Notify: []*store.Notification{note("run.failed:run_n")}}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("settle by a stranger: %v", err)
	}
	if _, err := s.AnswerRun(ctx, store.AnswerParams{ID: r.ID, QuestionID: "q1", Answer: "no", Now: tNow}); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, r.ID, "d")
	if _, err := s.SettleRun(ctx, store.SettleParams{ID: r.ID, Claim: "d", Status: store.RunFailed, Error: "x", Now: tNow, Notify: []*store.Notification{note("run.failed:run_n")}}); err != nil {
		t.Fatal(err)
	}
	ns, err := s.Notifications(ctx, 10)
	if err != nil || len(ns) != 2 {
		t.Fatalf("notifications: %+v %v", ns, err)
	}
	seen := map[string]bool{}
	for _, n := range ns {
		seen[n.ID] = true
	}
	if !seen["run.waiting:run_n:q1"] || !seen["run.failed:run_n"] {
		t.Fatalf("notifications: %v", seen)
	}
}

func testOutboxPrune(t *testing.T, s store.Store) {
	ctx := context.Background()
	if _, err := s.EnqueueNotification(ctx, note("old")); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(time.Second)
	got, err := s.ClaimNotifications(ctx, store.ClaimNotificationsParams{Claim: "c", Now: now, Lease: time.Minute, Limit: 10})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim: %v %v", got, err)
	}
	if err := s.RecordNotification(ctx, store.NotificationOutcome{ID: "old", Claim: "c", Now: now, Sent: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnqueueNotification(ctx, note("new")); err != nil {
		t.Fatal(err)
	}
	later := now.Add(store.NotificationKeep + time.Hour)
	got, _ = s.ClaimNotifications(ctx, store.ClaimNotificationsParams{Claim: "d", Now: later, Lease: time.Minute, Limit: 10})
	if len(got) != 1 || got[0].ID != "new" {
		t.Fatalf("claim: %+v", got)
	}
	if err := s.RecordNotification(ctx, store.NotificationOutcome{ID: "new", Claim: "d", Now: later, Sent: true}); err != nil {
		t.Fatal(err)
	}
	ns, _ := s.Notifications(ctx, 10)
	if len(ns) != 1 || ns[0].ID != "new" {
		t.Fatalf("after the keep period: %+v, want only the new row", ns)
	}
}
