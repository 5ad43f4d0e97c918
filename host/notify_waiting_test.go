package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/notify"
	"github.com/cairnhq/cairn/notify/notifytest"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
)

// A run that parks on a question in a started host sends the run.waiting
// event to the webhook once, naming the question and how to answer it;
// answered, the run goes on and succeeds with no further event.
func TestWaitingRunNotifiesTheWebhookOnce(t *testing.T) {
	t.Parallel()
	hook := notifytest.NewWebhook(t)
	got := hook.Got
	cfg := setup(t, "notify:\n  webhook: {url: \""+hook.URL+"\"}\n")
	cfg.Write = true
	ask := "name: deploy\nsteps:\n  - id: confirm\n    ask: \"Deploy to production?\"\n  - id: go\n    exec: [\"true\"]\n"
	if err := os.WriteFile(filepath.Join(cfg.Workspace, ".cairn", "workflows", "deploy.yaml"), []byte(ask), 0o600); err != nil {
		t.Fatal(err)
	}
	h := open(t, cfg)
	ctx := context.Background()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	r, err := h.Runs.Launch(ctx, runs.LaunchParams{Target: "deploy"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.Runs.WaitSettledOrParked(ctx, r.ID)
	if err != nil || p.Status != store.RunWaiting || p.Question == nil {
		t.Fatalf("not parked: %+v %v", p, err)
	}
	var d notify.Document
	select {
	case d = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the webhook received no run.waiting event")
	}
	if d.Event != notify.EventRunWaiting || d.ID != "run.waiting:"+r.ID+":"+p.Question.ID || d.Run == nil || d.Run.Question == nil ||
		d.Run.Question.Text != "Deploy to production?" || !strings.Contains(d.Text, "mcp-host answer "+r.ID) {
		t.Fatalf("document %+v", d)
	}
	waitSent(t, h, 1)
	if _, err := h.Runs.Answer(ctx, runs.AnswerParams{RunID: r.ID, QuestionID: p.Question.ID, Answer: "yes"}); err != nil {
		t.Fatal(err)
	}
	if done, err := h.Runs.WaitSettledOrParked(ctx, r.ID); err != nil || done.Status != store.RunSucceeded {
		t.Fatalf("after the answer: %+v %v", done, err)
	}
	h.notifier.outbox.Kick()
	h.Stop() // the outbox loop has ended: nothing more can come
	select {
	case extra := <-got:
		t.Fatalf("a second event: %+v", extra)
	default:
	}
	waitSent(t, h, 1)
}

// waitSent waits (a generous deadline, not a timing assertion) until the
// outbox holds n rows, all sent.
func waitSent(t *testing.T, h *Host, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ns, err := h.Store.Notifications(context.Background(), 10)
		if err != nil {
			t.Fatal(err)
		}
		sent := 0
		for _, x := range ns {
			if x.State == store.NotifySent {
				sent++
			}
		}
		if len(ns) > n {
			t.Fatalf("%d outbox rows, want %d: %+v", len(ns), n, ns)
		}
		if sent == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox rows %+v, want %d sent", ns, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
