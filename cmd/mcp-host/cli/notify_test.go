package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/notify"
	"github.com/cairnhq/cairn/notify/notifytest"
	"github.com/cairnhq/cairn/store"
)

// A foreground mcp-host run executes its run in a host that was not
// started: its notifications go out all the same, the question while the
// run waits on it and the failure before the command exits, each once.
func TestForegroundRunNotifies(t *testing.T) {
	t.Parallel()
	hook := notifytest.NewWebhook(t)
	got := hook.Got
	c := newCLIWS(t, map[string]string{
		"fails.yaml":  "steps:\n  - id: f\n    exec: [\"false\"]\n",
		"deploy.yaml": "steps:\n  - id: confirm\n    ask: \"Deploy?\"\n  - id: go\n    exec: [\"true\"]\n",
	})
	if err := os.WriteFile(filepath.Join(c.root, ".cairn", "config.yaml"), []byte("notify:\n  webhook: {url: \""+hook.URL+"\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The failure: sent before run exits.
	if code, _, errs := c.run("run", "fails"); code != 1 {
		t.Fatalf("run fails: exit %d: %s", code, errs)
	}
	select {
	case d := <-got:
		if d.Event != notify.EventRunFailed || d.Run == nil || d.Run.Target != "fails" {
			t.Fatalf("document %+v", d)
		}
	default:
		t.Fatal("run fails exited and the webhook had not received the failure")
	}

	// The question: sent while run waits on it.
	done := make(chan int, 1)
	go func() {
		code, _, _ := c.run("run", "deploy")
		done <- code
	}()
	var d notify.Document
	select {
	case d = <-got:
	case code := <-done:
		t.Fatalf("run deploy ended (%d) before a notification came", code)
	case <-time.After(60 * time.Second):
		t.Fatal("no run.waiting notification while the run waits")
	}
	if d.Event != notify.EventRunWaiting || d.Run == nil || d.Run.Question == nil || d.Run.Question.Text != "Deploy?" {
		t.Fatalf("document %+v", d)
	}
	if code, _, errs := c.run("answer", d.Run.ID, "yes"); code != 0 {
		t.Fatalf("answer: exit %d: %s", code, errs)
	}
	if code := <-done; code != 0 {
		t.Fatalf("run deploy: exit %d", code)
	}
	select {
	case extra := <-got:
		t.Fatalf("a further notification: %+v", extra)
	default:
	}
	st := c.openStore()
	defer st.Close()
	ns, err := st.Notifications(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, n := range ns {
		states = append(states, n.Kind+" "+string(n.State))
	}
	if len(ns) != 2 || ns[0].State != store.NotifySent || ns[1].State != store.NotifySent {
		t.Fatalf("outbox: %s", strings.Join(states, ", "))
	}
}
