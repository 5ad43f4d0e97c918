package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
)

// hook is a webhook receiver answering with the statuses in order (the
// last one from then on).
type hook struct {
	mu       sync.Mutex
	statuses []int
	reqs     []*http.Request
	bodies   [][]byte
	got      chan struct{}
}

func newHook(t *testing.T, statuses ...int) (*hook, *httptest.Server) {
	h := &hook{statuses: statuses, got: make(chan struct{}, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body json.RawMessage
		_ = json.NewDecoder(r.Body).Decode(&body)
		h.mu.Lock()
		i := min(len(h.reqs), len(h.statuses)-1)
		h.reqs, h.bodies = append(h.reqs, r), append(h.bodies, body)
		h.mu.Unlock()
		w.WriteHeader(h.statuses[i])
		h.got <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	return h, srv
}

func (h *hook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.reqs)
}

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func failedRun(t *testing.T, st store.Store, s Settings) string {
	t.Helper()
	r := &store.Run{ID: "run_1", Target: "nightly"}
	rows := s.RunEvent(Workspace{Root: "/w", ID: "0123456789ab"}, r, store.RunFailed, "step ping: exit status 1", nil, t0)
	if len(rows) != 1 {
		t.Fatalf("rows: %+v", rows)
	}
	if _, err := st.EnqueueNotification(context.Background(), rows[0]); err != nil {
		t.Fatal(err)
	}
	return rows[0].ID
}

func TestWebhookRetriesWithBackoffThenSends(t *testing.T) {
	t.Parallel()
	h, srv := newHook(t, 500, 503, 200)
	st := memory.New()
	clk := clock.NewFake(t0)
	s := Settings{Webhook: &WebhookSettings{URL: srv.URL, Header: "Authorization: Bearer tok"}}
	id := failedRun(t, st, s)
	b := NewOutbox(OutboxOptions{Store: st, Settings: s, Clock: clk})
	ctx := context.Background()
	step := func(advance time.Duration, wantSent, wantCalls int) {
		t.Helper()
		clk.Advance(advance)
		n, err := b.RunOnce(ctx)
		if err != nil || n != wantSent || h.count() != wantCalls {
			t.Fatalf("after %s: sent %d (%v), %d calls; want %d sent, %d calls", advance, n, err, h.count(), wantSent, wantCalls)
		}
	}
	step(0, 0, 1)                    // 500
	step(999*time.Millisecond, 0, 1) // not due: 1s backoff
	step(time.Millisecond, 0, 2)     // 503
	step(1999*time.Millisecond, 0, 2)
	step(time.Millisecond, 1, 3) // 2s later: 200
	step(time.Hour, 0, 3)        // sent: never again
	r := h.reqs[0]
	if r.Method != http.MethodPost || r.Header.Get("Idempotency-Key") != id || r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("request: %s %v", r.Method, r.Header)
	}
	var d Document
	if err := json.Unmarshal(h.bodies[2], &d); err != nil || d.Event != EventRunFailed || d.ID != "run.failed:run_1" || d.Run == nil || d.Run.Target != "nightly" || d.Run.Error != "step ping: exit status 1" || d.WorkspaceID != "0123456789ab" {
		t.Fatalf("document: %+v %v", d, err)
	}
	ns, _ := st.Notifications(ctx, 10)
	if len(ns) != 1 || ns[0].State != store.NotifySent || ns[0].Attempts != 3 {
		t.Fatalf("row: %+v", ns[0])
	}
}

func TestPermanentFailureDropsAndAttemptsAreCapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, bad := newHook(t, 404)
	st := memory.New()
	clk := clock.NewFake(t0)
	s := Settings{Webhook: &WebhookSettings{URL: bad.URL}}
	failedRun(t, st, s)
	if _, err := NewOutbox(OutboxOptions{Store: st, Settings: s, Clock: clk}).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if ns, _ := st.Notifications(ctx, 10); ns[0].State != store.NotifyDropped || ns[0].Attempts != 1 {
		t.Fatalf("after a 404: %+v", ns[0])
	}

	h, down := newHook(t, 500)
	st = memory.New()
	s = Settings{Webhook: &WebhookSettings{URL: down.URL}}
	failedRun(t, st, s)
	b := NewOutbox(OutboxOptions{Store: st, Settings: s, Clock: clk, MaxAttempts: 3, MaxBackoff: 4 * time.Second})
	for range 10 {
		clk.Advance(time.Hour)
		if _, err := b.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ns, _ := st.Notifications(ctx, 10); ns[0].State != store.NotifyDropped || ns[0].Attempts != 3 || h.count() != 3 {
		t.Fatalf("after 3 failures: %+v, %d calls", ns[0], h.count())
	}
	if got := b.backoff(10); got != 4*time.Second {
		t.Fatalf("backoff(10) = %s, want the 4s cap", got)
	}
}

// The loop wakes at the next retry time by itself (fake clock).
func TestLoopWakesForTheRetry(t *testing.T) {
	t.Parallel()
	h, srv := newHook(t, 500, 200)
	st := memory.New()
	clk := clock.NewFake(t0)
	s := Settings{Webhook: &WebhookSettings{URL: srv.URL}}
	failedRun(t, st, s)
	recorded := make(chan store.NotificationOutcome, 10)
	b := NewOutbox(OutboxOptions{Store: st, Settings: s, Clock: clk, Recorded: func(o store.NotificationOutcome) { recorded <- o }})
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	if o := <-recorded; o.Sent || o.Error != "post webhook: HTTP 500" {
		t.Fatalf("first attempt: %+v", o)
	}
	clk.BlockUntil(1) // the loop sleeps until the retry
	clk.Advance(time.Second)
	if o := <-recorded; !o.Sent {
		t.Fatalf("second attempt: %+v", o)
	}
	b.Stop()
	if h.count() != 2 {
		t.Fatalf("%d calls, want 2", h.count())
	}
	if ns, _ := st.Notifications(context.Background(), 10); ns[0].State != store.NotifySent {
		t.Fatalf("row: %+v", ns[0])
	}
}

func TestSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s  Settings
		ok bool
	}{
		{Settings{}, true},
		{Settings{Desktop: true, Events: []string{"failed"}}, true},
		{Settings{Events: []string{"crashed"}}, false},
		{Settings{Webhook: &WebhookSettings{URL: "ftp://x"}}, false},
		{Settings{Webhook: &WebhookSettings{URL: "https://u:p@x/"}}, false},
		{Settings{Webhook: &WebhookSettings{URL: "https://x/", Header: "no colon"}}, false},
		{Settings{Webhook: &WebhookSettings{URL: "https://x/", Header: "X-Token: a\nb"}}, false},
		{Settings{Webhook: &WebhookSettings{URL: "https://x/", Header: "X-Token: abc"}}, true},
	} {
		if err := tc.s.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc.s, err)
		}
	}
	s := Settings{Desktop: true, Events: []string{"waiting"}}
	r := &store.Run{ID: "run_1", Target: "t"}
	if rows := s.RunEvent(Workspace{}, r, store.RunFailed, "x", nil, t0); rows != nil {
		t.Fatalf("failed sent with events [waiting]: %+v", rows)
	}
	rows := s.RunEvent(Workspace{}, r, store.RunWaiting, "", &store.Question{ID: "q1", Text: "go?"}, t0)
	if len(rows) != 1 || rows[0].ID != "run.waiting:run_1:q1/desktop" {
		t.Fatalf("waiting: %+v", rows)
	}
	if rows := s.RunEvent(Workspace{}, r, store.RunSucceeded, "", nil, t0); rows != nil {
		t.Fatalf("a success notified: %+v", rows)
	}
}
