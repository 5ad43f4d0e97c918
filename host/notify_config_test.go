package host

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/notify"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
)

func TestNotifyConfig(t *testing.T) {
	t.Parallel()
	h := open(t, setup(t, "notify:\n  events: [failed]\n  webhook:\n    url: https://hooks.example.com/x\n    header: \"Authorization: Bearer t\"\n    timeout: 3s\n"))
	n := h.Settings.Notify
	if n.Webhook == nil || n.Webhook.URL != "https://hooks.example.com/x" || time.Duration(n.Webhook.Timeout) != 3*time.Second || !n.Wants(notify.EventRunFailed) || n.Wants(notify.EventRunWaiting) {
		t.Fatalf("notify settings %+v", n)
	}
	for config, want := range map[string]string{
		"notify:\n  webhok: {url: https://x/}\n":                 "field webhok not found",
		"notify:\n  webhook: {url: file:///etc/passwd}\n":        "write an http or https URL",
		"notify:\n  events: [crashed]\n":                         `unknown event "crashed"`,
		"notify:\n  webhook: {url: https://x/, timeout: soon}\n": "is not a duration",
	} {
		_, err := Open(context.Background(), setup(t, config))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", config, err, want)
		}
	}
}

// A run that fails in a host with notify: writes its outbox rows (one per
// channel) with the settle; one that succeeds writes none.
func TestFailedRunEnqueuesNotifications(t *testing.T) {
	t.Parallel()
	cfg := setup(t, "notify:\n  desktop: true\n  webhook: {url: \"http://127.0.0.1:9/hook\"}\n")
	cfg.Write = true
	addFailingWorkflow(t, cfg)
	h := open(t, cfg)
	ctx := context.Background()
	ids := map[string]store.RunStatus{}
	for _, target := range []string{"hello", "fails"} {
		r, err := h.Runs.Launch(ctx, runs.LaunchParams{Target: target})
		if err != nil {
			t.Fatal(err)
		}
		done, err := h.Runs.WaitSettledOrParked(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		ids[target] = done.Status
		if target == "fails" {
			ns, err := h.Store.Notifications(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			// The rows exist once the settle is done: written with it. (The
			// outbox loop this unstarted host starts for them may have
			// tried them already, so their state is not checked.)
			got := map[string]bool{}
			for _, n := range ns {
				got[n.ID] = n.Kind == notify.EventRunFailed
			}
			want := "run.failed:" + r.ID
			if len(got) != 2 || !got[want+"/desktop"] || !got[want+"/webhook"] {
				t.Fatalf("outbox: %v, want %s for both channels", got, want)
			}
		}
	}
	if ids["hello"] != store.RunSucceeded || ids["fails"] != store.RunFailed {
		t.Fatalf("runs ended %v", ids)
	}
}
