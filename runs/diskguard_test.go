package runs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/diskfree"
	"github.com/cairnhq/cairn/store"
)

// TestLaunchRefusedWhenTheDiskIsFull: with the state disk nearly full,
// Launch stores nothing and says how much is free; once space is back, it
// launches again.
func TestLaunchRefusedWhenTheDiskIsFull(t *testing.T) {
	t.Parallel()
	free := uint64(50 << 20)
	guard := &diskfree.Guard{Measure: func(string) (diskfree.Space, error) {
		return diskfree.Space{Free: free, Total: 100 << 30}, nil
	}}
	te := setup(t, map[string]string{"hello.yaml": helloYAML}, func(o *Options) {
		guard.Path = o.Workspace.StateDir
		o.DiskGuard = guard
	})
	_, err := te.e.Launch(te.ctx, LaunchParams{Target: "hello"})
	var low *diskfree.LowError
	if !errors.As(err, &low) || !strings.Contains(err.Error(), "the state disk has 50 MB free") {
		t.Fatalf("Launch on a full disk: err = %v, want a *diskfree.LowError with 50 MB free", err)
	}
	runs, _, err := te.st.ListRuns(te.ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 0 {
		t.Fatalf("a refused launch stored %d runs", len(runs))
	}
	free = 10 << 30
	r := te.launch("hello", `{}`) // fails the test on an error
	te.wait(te.e, r.ID)
}

// TestRunningStepsGoOnWhenTheDiskFills: a run whose step is running when
// the state disk falls under the threshold goes on: its step finishes,
// the next step starts and the run succeeds with its output journaled,
// while a new launch meanwhile is refused.
func TestRunningStepsGoOnWhenTheDiskFills(t *testing.T) {
	t.Parallel()
	var free atomic.Uint64
	free.Store(10 << 30)
	guard := &diskfree.Guard{Measure: func(string) (diskfree.Space, error) {
		return diskfree.Space{Free: free.Load(), Total: 100 << 30}, nil
	}}
	te := setup(t, map[string]string{"gated.yaml": `
steps:
  - id: gated
    shell: |
      touch ready
      while [ ! -e go ]; do sleep 0.05; done
      echo "gated done"
  - id: after
    exec: [echo, after]
`, "hello.yaml": helloYAML}, func(o *Options) {
		guard.Path = o.Workspace.StateDir
		o.DiskGuard = guard
	})
	r := te.launch("gated", "")
	deadline := time.Now().Add(60 * time.Second) // generous: not an assertion of speed
	for {
		if _, err := os.Stat(filepath.Join(te.ws.Root, "ready")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the gated step never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	free.Store(50 << 20)
	var low *diskfree.LowError
	if _, err := te.e.Launch(te.ctx, LaunchParams{Target: "hello"}); !errors.As(err, &low) {
		t.Fatalf("a launch while the disk is full: %v, want a *diskfree.LowError", err)
	}
	if err := os.WriteFile(filepath.Join(te.ws.Root, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done := te.wait(te.e, r.ID)
	if done.Status != store.RunSucceeded {
		t.Fatalf("the running run on a full disk: %s: %s", done.Status, done.Error)
	}
	recs := te.records(te.e, r.ID)
	if g, a := textsOf(recs, "gated"), textsOf(recs, "after"); len(g) != 1 || g[0].Text != "gated done" || len(a) != 1 || a[0].Text != "after" {
		t.Fatalf("journal of the run: gated %+v, after %+v", g, a)
	}
}
