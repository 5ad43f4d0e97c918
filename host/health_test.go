package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/tmpfs"
	"github.com/cairnhq/cairn/store"
)

func TestStoreBusyTimeoutSetting(t *testing.T) {
	t.Parallel()
	cfg := setup(t, "store:\n  busy_timeout: 90s\n")
	cfg.Write = true
	h := open(t, cfg)
	if d := h.Settings.Store.BusyTimeout; d == nil || time.Duration(*d) != 90*time.Second {
		t.Fatalf("store.busy_timeout = %v", d)
	}
	if _, err := Open(context.Background(), setup(t, "store:\n  busy_timeout: 500ms\n")); err == nil || !strings.Contains(err.Error(), "store.busy_timeout is 500ms") {
		t.Fatalf("Open with busy_timeout 500ms: %v", err)
	}
}

// waitUntil polls cond (a generous deadline, not an assertion of speed).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHostStopsWhenTheDatabaseVanishes(t *testing.T) {
	t.Parallel()
	cfg := setup(t, "")
	cfg.Write = true
	h := open(t, cfg)
	ctx, release := h.UntilFailed(context.Background())
	defer release()
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the scheduler to lead", h.Scheduler.Leading)
	// The host may create a file while RemoveAll walks the folder
	// ("directory not empty"); deleting again is what a person would do.
	for i := 0; ; i++ {
		err := os.RemoveAll(h.Workspace.StateDir)
		if err == nil {
			break
		}
		if i == 100 {
			t.Fatal(err)
		}
	}
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the host did not notice its database vanished")
	}
	err := h.Failed()
	if err == nil || !errors.Is(context.Cause(ctx), store.ErrStopped) || !strings.Contains(err.Error(), h.Workspace.StateDir) {
		t.Fatalf("Failed = %v, cause %v", err, context.Cause(ctx))
	}
	waitUntil(t, "the scheduler to stop", func() bool { return !h.Scheduler.Running() })
}

func TestHostReleasesTheSchedulerWhileTheDiskIsFull(t *testing.T) {
	t.Parallel()
	disk := tmpfs.Mount(t, "4m")
	cfg := setup(t, "")
	cfg.StateRoot, cfg.Write = filepath.Join(disk, "state"), true
	h := open(t, cfg)
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the scheduler to lead", h.Scheduler.Leading)
	fill := filepath.Join(disk, "fill")
	tmpfs.Fill(t, fill)
	health := h.Store.(store.HealthWatcher)
	for i := 0; !store.IsUnavailable(health.Health().Err); i++ {
		if i > 10000 {
			t.Fatal("the store never paused")
		}
		_ = h.Store.CreateRun(context.Background(), &store.Run{ID: fmt.Sprintf("run-%d", i), Target: "t", Literals: []byte(strings.Repeat("x", 4000))})
	}
	waitUntil(t, "the scheduler to be released", func() bool { return !h.Scheduler.Running() && !h.Scheduler.Leading() })
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the scheduler to lead again", h.Scheduler.Leading)
	if h.Failed() != nil {
		t.Fatalf("a full disk is not fatal: %v", h.Failed())
	}
}
