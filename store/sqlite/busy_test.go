package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/reexec"
	"github.com/cairnhq/cairn/internal/stuckwriter"
)

// logBuffer is a logger's output, read while it writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStuckWriterBlocksNoReader holds the write lock in another process:
// opening the store and reading need no write lock; a write waits,
// saying for whom, and goes through once the lock is free, or gives up
// after WriteWait naming the setting.
func TestStuckWriterBlocksNoReader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "state.sqlite3")
	s0, err := Open(ctx, dbPath, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := createRun(s0, "before", 10); err != nil {
		t.Fatal(err)
	}
	s0.Close()

	holder := reexec.Start(t, reexec.Params{Args: []string{"-test.run=^$"}, Env: []string{stuckwriter.Env + "=" + dbPath}})
	if line := holder.Line(t); line != "holding" {
		t.Fatalf("holder said %q", line)
	}
	start := time.Now()
	var logs logBuffer
	s, err := Open(ctx, dbPath, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("open while another process holds the write lock: %v", err)
	}
	defer s.Close()
	if _, err := s.GetRun(ctx, "run-before"); err != nil {
		t.Fatalf("read while another process holds the write lock: %v", err)
	}
	t.Logf("open and read while a writer holds the lock: %s", time.Since(start).Round(time.Millisecond))

	short, err := Open(ctx, dbPath, Options{WriteWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	if err := createRun(short, "short", 10); err == nil || !strings.Contains(err.Error(), "store.busy_timeout") {
		t.Fatalf("write past WriteWait: %v", err)
	}

	wrote := make(chan error, 1)
	go func() { wrote <- createRun(s, "waited", 10) }()
	want := fmt.Sprintf("waiting for pid %d's write for", holder.Cmd.Process.Pid)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the waiting writer never said %q; log:\n%s", want, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	holder.Stdin.Close() // the holder rolls back and exits
	if err := <-wrote; err != nil {
		t.Fatalf("write after the lock was freed: %v", err)
	}
	if err := holder.Cmd.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
}
