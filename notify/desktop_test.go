package notify

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
)

// A desktop row runs notify-send from PATH with the title and text; with
// no notify-send the row is dropped, not retried.
func TestDesktopNotification(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("notify-send is the Linux tool")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "shown")
	script := "#!/bin/sh\nprintf '%s|' \"$@\" > " + out + "\n"
	if err := os.WriteFile(filepath.Join(dir, "notify-send"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir) // not parallel: PATH is the process's
	ctx := context.Background()
	st := memory.New()
	s := Settings{Desktop: true}
	r := &store.Run{ID: "run_1", Target: "nightly"}
	for _, n := range s.RunEvent(Workspace{}, r, store.RunWaiting, "", &store.Question{ID: "q1", Text: "Deploy?"}, t0) {
		if _, err := st.EnqueueNotification(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	b := NewOutbox(OutboxOptions{Store: st, Settings: s, Clock: clock.NewFake(t0)})
	if n, err := b.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("sent %d: %v", n, err)
	}
	got, _ := os.ReadFile(out)
	if want := "--app-name=Cairn|Cairn: nightly is waiting for an answer|Deploy? (mcp-host answer run_1 <answer>)|"; string(got) != want {
		t.Fatalf("notify-send got %q, want %q", got, want)
	}

	t.Setenv("PATH", t.TempDir()) // no notify-send
	st = memory.New()
	for _, n := range s.RunEvent(Workspace{}, r, store.RunFailed, "boom", nil, t0) {
		if _, err := st.EnqueueNotification(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	b = NewOutbox(OutboxOptions{Store: st, Settings: s, Clock: clock.NewFake(t0)})
	if _, err := b.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	ns, _ := st.Notifications(ctx, 10)
	if len(ns) != 1 || ns[0].State != store.NotifyDropped || !strings.Contains(ns[0].LastError, "notify-send is not on PATH") {
		t.Fatalf("without notify-send: %+v", ns)
	}
}
