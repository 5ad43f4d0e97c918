package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/tmpfs"
	"github.com/cairnhq/cairn/internal/wake"
	"github.com/cairnhq/cairn/store"
)

func createRun(s *Store, op string, size int) error {
	ctx := store.WithOpID(context.Background(), "op-"+op)
	return s.CreateRun(ctx, &store.Run{ID: "run-" + op, Target: "t", Literals: []byte(strings.Repeat("x", size))})
}

// waitClosed waits for ch (a generous deadline, not a speed assertion).
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("gave up waiting for %s", what)
	}
}

func TestVanishedDatabaseStopsWrites(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		vanish func(t *testing.T, dir, dbPath string)
	}{
		{"folder deleted", func(t *testing.T, dir, _ string) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		}},
		{"file replaced", func(t *testing.T, dir, dbPath string) {
			other := filepath.Join(dir, "other.sqlite3")
			o, err := Open(context.Background(), other, Options{})
			if err != nil {
				t.Fatal(err)
			}
			o.Close()
			if err := os.Rename(other, dbPath); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "state")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			dbPath := filepath.Join(dir, "state.sqlite3")
			fake := clock.NewFake(time.Now())
			s, err := Open(context.Background(), dbPath, Options{Clock: fake})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := createRun(s, "before", 10); err != nil {
				t.Fatal(err)
			}
			changed := s.HealthChanged()
			tc.vanish(t, dir, dbPath)
			// Without any write, the watcher notices within a second.
			fake.BlockUntil(1)
			fake.Advance(fileCheckEvery)
			waitClosed(t, changed, "the store to notice its database is gone")
			h := s.Health()
			if !h.Fatal || h.Err == nil || !strings.Contains(h.Err.Error(), dir) {
				t.Fatalf("health after the database vanished: %+v", h)
			}
			err = createRun(s, "after", 10)
			var u *store.UnavailableError
			if !errors.As(err, &u) || u.Reason != store.ReasonVanished || !strings.Contains(err.Error(), dir) || !errors.Is(err, store.ErrStopped) {
				t.Fatalf("write after the database vanished: %v", err)
			}
		})
	}
}

// TestWriteRacingADeletionIsNotAcknowledged deletes the folder while
// writers run: no write that returns nil may start after the deletion.
func TestWriteRacingADeletionIsNotAcknowledged(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), filepath.Join(dir, "state.sqlite3"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	deleted := make(chan struct{})
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for i := 0; ; i++ {
				select {
				case <-deleted:
					// Started after the deletion: must be refused.
					if err := createRun(s, fmt.Sprintf("late-%d-%d", g, i), 100); err == nil {
						errs <- fmt.Errorf("a write started after the deletion was acknowledged")
					} else {
						errs <- nil
					}
					return
				default:
				}
				if err := createRun(s, fmt.Sprintf("%d-%d", g, i), 100); err != nil {
					errs <- nil
					return
				}
			}
		}()
	}
	if err := createRun(s, "first", 100); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	close(deleted)
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestDiskFullPausesAndResumes fills a small tmpfs under the store: the
// commit that fails is resolved by operation id, later writes are refused
// with a clear error, and once space is freed the store resumes by itself
// (trial writes paced by the fake clock) with nothing acknowledged lost.
func TestDiskFullPausesAndResumes(t *testing.T) {
	t.Parallel()
	dir := tmpfs.Mount(t, "2m")
	fake := clock.NewFake(time.Now())
	s, err := Open(context.Background(), filepath.Join(dir, "state.sqlite3"), Options{Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	retried := make(chan struct{}, 1)
	s.afterRetry = func() {
		select {
		case retried <- struct{}{}:
		default:
		}
	}
	acked := []string{}
	for i := range 5 {
		op := fmt.Sprintf("a%d", i)
		if err := createRun(s, op, 4000); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, op)
	}
	fill := filepath.Join(dir, "fill")
	tmpfs.Fill(t, fill)
	paused := s.HealthChanged()
	outcomes := map[string]error{}
	for i := 0; ; i++ {
		if i > 10000 {
			t.Fatal("the disk never filled up")
		}
		op := fmt.Sprintf("b%d", i)
		err := createRun(s, op, 4000)
		if err == nil {
			acked = append(acked, op)
			continue
		}
		outcomes[op] = err
		t.Logf("write %s on the full disk: %v", op, err)
		break
	}
	waitClosed(t, paused, "the store to pause")
	h := s.Health()
	want := "state disk full: free space on " + dir + "; Cairn resumes by itself"
	if h.Err == nil || h.Fatal || h.Err.Error() != want {
		t.Fatalf("health on a full disk: %+v, want error %q", h, want)
	}
	if err := createRun(s, "refused", 10); !store.IsUnavailable(err) || err.Error() != want {
		t.Fatalf("write while paused: %v", err)
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	resumed := s.HealthChanged()
	// The retry timer, and the file watcher's ticker when it cannot wait
	// on the folder's entries (it has no timer while it can).
	timers := 2
	if w, err := wake.WatchDirEntries(dir); err == nil {
		w.Close()
		timers = 1
	}
	for s.Health().Err != nil {
		fake.BlockUntil(timers)
		fake.Advance(retryMax)
		waitClosed(t, retried, "a trial write")
	}
	waitClosed(t, resumed, "the store to resume")
	if err := createRun(s, "after", 4000); err != nil {
		t.Fatalf("write after space was freed: %v", err)
	}
	for _, op := range append(acked, "after") {
		if _, err := s.GetRun(context.Background(), "run-"+op); err != nil {
			t.Errorf("acknowledged run %s: %v", op, err)
		}
	}
	for op, err := range outcomes {
		o, lerr := s.Outcome(context.Background(), "op-"+op)
		var ce *store.CommitError
		switch {
		case lerr != nil:
			t.Fatal(lerr)
		case errors.As(err, &ce) && ce.Outcome != store.Unknown && ce.Outcome != o:
			t.Errorf("operation %s was answered %v but is %v", op, ce.Outcome, o)
		case o == store.Committed && !errors.As(err, &ce):
			t.Errorf("operation %s was refused (%v) but committed", op, err)
		}
	}
	if err := s.IntegrityCheck(context.Background()); err != nil {
		t.Fatal(err)
	}
}
