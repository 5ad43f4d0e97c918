package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/notify"
	"github.com/cairnhq/cairn/notify/notifytest"
	"github.com/cairnhq/cairn/store"
)

// An automation whose runs keep failing is paused by the started host's
// scheduler (here after one, fired by hand: the count in a row is tested
// in automations), and the webhook receives the paused event once.
func TestRepeatedFailuresPauseAndNotifyTheWebhook(t *testing.T) {
	t.Parallel()
	hook := notifytest.NewWebhook(t)
	got := hook.Got
	cfg := setup(t, "automations:\n  pause_after_failures: 1\nnotify:\n  events: [paused]\n  webhook: {url: \""+hook.URL+"\"}\n")
	cfg.Write = true
	addFailingWorkflow(t, cfg)
	h := open(t, cfg)
	ctx := context.Background()
	res, err := h.Automations.Create(ctx, automations.CreateParams{Owner: "cli", Spec: automations.Spec{Key: "ping", Target: "fails", Every: "1h"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	if _, err := h.Automations.Trigger(ctx, automations.TriggerParams{Ref: "ping"}); err != nil {
		t.Fatal(err)
	}
	var d notify.Document
	select {
	case d = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the webhook received no paused event")
	}
	if d.Event != notify.EventAutomationPaused || d.Automation == nil || d.Automation.Key != "ping" || !strings.Contains(d.Text, "mcp-host automations resume ping") {
		t.Fatalf("document %+v", d)
	}
	a, err := h.Store.GetAutomation(ctx, res.Automation.ID)
	if err != nil || a.Enabled || a.State.Failures != 1 || a.Note != d.Automation.Note {
		t.Fatalf("automation after the event: %+v, %v", a, err)
	}
	// The row is recorded sent (so never sent again), and it is the only one.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ns, err := h.Store.Notifications(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ns) != 1 {
			t.Fatalf("%d outbox rows, want 1", len(ns))
		}
		if ns[0].State == store.NotifySent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("row still %s", ns[0].State)
		}
		h.notifier.outbox.Kick()
		select {
		case extra := <-got:
			t.Fatalf("a second event: %+v", extra)
		case <-time.After(10 * time.Millisecond):
		}
	}
	h.Stop()
	if n := hook.Hits(); n != 1 {
		t.Fatalf("webhook hit %d times, want 1", n)
	}
}

func TestPauseAfterFailuresConfig(t *testing.T) {
	t.Parallel()
	for config, want := range map[string]int{
		"": 5,
		"automations:\n  pause_after_failures: 0\n": 0,
		"automations:\n  pause_after_failures: 3\n": 3,
	} {
		h := open(t, setup(t, config))
		if got := h.Settings.Automations.pauseAfter(); got != want {
			t.Errorf("%q: pause after %d, want %d", config, got, want)
		}
	}
	for config, want := range map[string]string{
		"automations:\n  pause_after_failures: -1\n":   "use 0 (never pause) to 1000",
		"automations:\n  pause_after_failures: 5000\n": "use 0 (never pause) to 1000",
		"automations:\n  pause_after_failures: lots\n": "cannot unmarshal",
		"automations:\n  pause_after: 3\n":             "field pause_after not found",
	} {
		_, err := Open(context.Background(), setup(t, config))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", config, err, want)
		}
	}
}

// addFailingWorkflow adds the workflow "fails" to cfg's workspace: one
// step that exits 1.
func addFailingWorkflow(t *testing.T, cfg Config) {
	t.Helper()
	fails := "name: fails\nsteps:\n  - id: f\n    exec: [\"false\"]\n"
	if err := os.WriteFile(filepath.Join(cfg.Workspace, ".cairn", "workflows", "fails.yaml"), []byte(fails), 0o600); err != nil {
		t.Fatal(err)
	}
}
