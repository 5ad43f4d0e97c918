package locks

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/cairnhq/cairn/internal/ids"
)

// setup returns a lock directory that does not exist yet.
func setup(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "locks")
}

func mustLock(t *testing.T, dir, name string) *Lock {
	t.Helper()
	l, err := TryLock(dir, name)
	if err != nil {
		t.Fatalf("TryLock(%s): %v", name, err)
	}
	t.Cleanup(func() { _ = l.Unlock() })
	return l
}

func TestInvalidNamesCreateNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ label, name string }{
		{"parent", "../x"},
		{"nul", "a\x00b"},
		{"long", strings.Repeat("a", 1024)},
		{"empty", ""},
		{"slash", "a/b"},
		{"absolute", "/etc/passwd"},
		{"hidden", ".x"},
	} {
		t.Run(tc.label, func(t *testing.T) {
			t.Parallel()
			dir := setup(t)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			_, errTry := TryLock(dir, tc.name)
			_, errAcquire := Acquire(ctx, dir, tc.name)
			_, _, errDescribe := Describe(dir, tc.name)
			for _, err := range []error{errTry, errAcquire, errDescribe} {
				if _, ok := errors.AsType[*ids.InvalidError](err); !ok {
					t.Errorf("error = %v, want an *ids.InvalidError", err)
				}
			}
			if _, err := os.Lstat(filepath.Dir(dir)); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("lock directory exists after refusal (%v)", err)
			}
		})
	}
}

func TestEmptyDirRefused(t *testing.T) {
	t.Parallel()
	if l, err := TryLock("", "worker"); err == nil {
		_ = l.Unlock()
		t.Fatal("TryLock with an empty directory succeeded")
	}
}

func TestModes(t *testing.T) {
	t.Parallel()
	dir := setup(t)
	mustLock(t, dir, "worker")
	for _, tc := range []struct {
		path string
		want fs.FileMode
	}{
		{dir, fs.ModeDir | 0o700},
		{filepath.Join(dir, "worker"), 0o600},
	} {
		fi, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != tc.want {
			t.Errorf("%s has mode %v, want %v", tc.path, fi.Mode(), tc.want)
		}
	}
}

func TestRecordWrittenAndCleared(t *testing.T) {
	t.Parallel()
	dir := setup(t)
	path := filepath.Join(dir, "edit-42")
	l := mustLock(t, dir, "edit-42")

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatalf("record %q: %v", b, err)
	}
	if fields["pid"] != float64(os.Getpid()) {
		t.Errorf("record pid = %v, want %d", fields["pid"], os.Getpid())
	}
	want := []string{"pid", "since", "host"}
	if self().bootID != "" {
		want = append(want, "boot_id", "start_time")
	}
	for _, k := range want {
		if _, ok := fields[k]; !ok {
			t.Errorf("record %s lacks %q", b, k)
		}
	}

	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(path) // the file stays, empty
	if err != nil || len(b) != 0 {
		t.Errorf("lock file after Unlock = %q, %v; want empty", b, err)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	dir := setup(t)

	h, held, err := Describe(dir, "scheduler")
	if err != nil || held {
		t.Fatalf("Describe before any lock = %v, %v, %v; want not held", h, held, err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Describe created the lock directory (%v)", err)
	}

	l := mustLock(t, dir, "scheduler")
	h, held, err = Describe(dir, "scheduler")
	if err != nil || !held || h.PID != os.Getpid() || h.Since.IsZero() || h.Host != self().host {
		t.Fatalf("Describe while held = %+v, %v, %v; want held by us", h, held, err)
	}
	// Describe only peeked: the lock is still ours.
	if _, err := TryLock(dir, "scheduler"); !errors.Is(err, ErrHeld) {
		t.Errorf("TryLock after Describe = %v, want ErrHeld", err)
	}

	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if h, held, err := Describe(dir, "scheduler"); err != nil || held {
		t.Errorf("Describe after Unlock = %v, %v, %v; want not held", h, held, err)
	}
}

// A record left by a process that has ended is never shown as the holder,
// even while the kernel lock is held by someone who has not yet written.
func TestStaleRecordNotShown(t *testing.T) {
	t.Parallel()
	if self().bootID == "" {
		t.Skip("no boot id here")
	}
	dir := setup(t)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "run-7")
	dead := newRecord(time.Now())
	dead.BootID = "00000000-0000-0000-0000-000000000000" // an earlier boot
	b, err := json.Marshal(dead)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	fl := flock.New(path) // locks without writing a record
	if ok, err := fl.TryLock(); !ok || err != nil {
		t.Fatalf("flock: %v, %v", ok, err)
	}
	defer fl.Unlock()

	h, held, err := Describe(dir, "run-7")
	if err != nil || !held || h != (Holder{}) {
		t.Errorf("Describe = %+v, %v, %v; want held by an unknown process", h, held, err)
	}
	_, err = TryLock(dir, "run-7")
	if err == nil || err.Error() != "run-7 is held by another process" {
		t.Errorf("TryLock = %v, want held by another process", err)
	}
}

// Within one process, each Lock is its own owner: of many goroutines
// trying one name at once, exactly one gets it.
func TestSameProcessExcludes(t *testing.T) {
	t.Parallel()
	dir := setup(t)
	const n = 8
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		locks = make([]*Lock, n)
		errs  = make([]error, n)
	)
	for i := range n {
		wg.Go(func() {
			<-start
			locks[i], errs[i] = TryLock(dir, "worker")
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for i := range n {
		switch {
		case errs[i] == nil:
			won++
			defer locks[i].Unlock()
		case !errors.Is(errs[i], ErrHeld):
			t.Errorf("TryLock: %v, want ErrHeld", errs[i])
		}
	}
	if won != 1 {
		t.Errorf("%d goroutines got the lock, want 1", won)
	}
}

func TestUnlockIdempotent(t *testing.T) {
	t.Parallel()
	dir := setup(t)
	l := mustLock(t, dir, "worker")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := l.Unlock(); err != nil {
				t.Errorf("Unlock: %v", err)
			}
		})
	}
	wg.Wait()
	if err := l.Unlock(); err != nil {
		t.Errorf("Unlock again: %v", err)
	}
	var none *Lock
	if err := none.Unlock(); err != nil {
		t.Errorf("nil Unlock: %v", err)
	}
	// Released: another Lock can take it, and the old one does not undo that.
	l2 := mustLock(t, dir, "worker")
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := TryLock(dir, "worker"); !errors.Is(err, ErrHeld) {
		t.Errorf("TryLock = %v after a stale Unlock, want ErrHeld (held by %s)", err, l2.Name())
	}
}

func TestAcquireCancelled(t *testing.T) {
	t.Parallel()
	dir := setup(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Acquire(ctx, dir, "worker"); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with a cancelled context = %v, want context.Canceled", err)
	}

	mustLock(t, dir, "scheduler")
	ctx, cancel = context.WithCancel(t.Context())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := Acquire(ctx, dir, "scheduler")
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrHeld) {
		t.Errorf("Acquire cancelled while held = %v, want context.Canceled and ErrHeld", err)
	}
}

func TestSymlinkRefused(t *testing.T) {
	t.Parallel()
	dir := setup(t)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "worker")); err != nil {
		t.Fatal(err)
	}
	if l, err := TryLock(dir, "worker"); err == nil {
		_ = l.Unlock()
		t.Error("TryLock through a symlink succeeded")
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious" {
		t.Errorf("symlink target now holds %q (%v)", b, err)
	}
}

// replaceFile renames a fresh file (mode 0644, not a record) over path.
func replaceFile(t *testing.T, path string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// lockedIsPath reports whether l's locked descriptor is the file at its path.
func lockedIsPath(t *testing.T, l *Lock) bool {
	t.Helper()
	locked, err := l.fl.Stat()
	if err != nil {
		t.Fatal(err)
	}
	now, err := os.Stat(l.path)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(locked, now)
}

func TestFileReplacedWhileUnlocked(t *testing.T) {
	t.Parallel()
	dir := setup(t)
	path := filepath.Join(dir, "worker")
	l := mustLock(t, dir, "worker")
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	replaceFile(t, path)

	l = mustLock(t, dir, "worker")
	if !lockedIsPath(t, l) {
		t.Error("locked a file the path does not name")
	}
	if h, held, err := Describe(dir, "worker"); err != nil || !held || h.PID != os.Getpid() {
		t.Errorf("Describe = %v, %v, %v; want held by us", h, held, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("replaced lock file mode = %v (%v), want 0600", fi.Mode(), err)
	}
}

// When the file is replaced between opening and locking, TryLock notices
// and locks the file the path names now.
func TestFileReplacedWhileLocking(t *testing.T) {
	t.Parallel()
	dir := setup(t)
	path := filepath.Join(dir, "run-9")
	calls := 0
	l, err := tryLock(dir, "run-9", &hooks{afterFlock: func(path string) {
		calls++
		if calls == 1 {
			replaceFile(t, path)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if calls != 2 {
		t.Errorf("locked %d times, want 2 (the replaced file, then the new one)", calls)
	}
	if !lockedIsPath(t, l) {
		t.Error("locked a file the path does not name")
	}
	if _, err := TryLock(dir, "run-9"); !errors.Is(err, ErrHeld) {
		t.Errorf("TryLock = %v, want ErrHeld", err)
	}
	if r, ok := readRecord(path); !ok || r.PID != os.Getpid() {
		t.Errorf("record = %+v, %v; want ours", r, ok)
	}
}

func TestFileKeepsBeingRemoved(t *testing.T) {
	t.Parallel()
	dir := setup(t)
	calls := 0
	_, err := tryLock(dir, "run-9", &hooks{afterFlock: func(path string) {
		calls++
		if err := os.Remove(path); err != nil {
			t.Error(err)
		}
	}})
	if err == nil || !strings.Contains(err.Error(), "keeps being replaced") || calls != maxReplaced {
		t.Fatalf("tryLock = %v after %d attempts, want an error after %d", err, calls, maxReplaced)
	}
	mustLock(t, dir, "run-9") // nothing was left held
}

func TestHolderText(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		label       string
		h           Holder
		str, errStr string
	}{
		{"full", Holder{PID: 1234, Since: since, Host: "h"}, "pid 1234 since 2026-11-29T19:00:00Z", "scheduler is held by pid 1234 (since 2026-11-29T19:00:00Z)"},
		{"zone", Holder{PID: 1234, Since: since.In(time.FixedZone("x", 3600))}, "pid 1234 since 2026-11-29T19:00:00Z", "scheduler is held by pid 1234 (since 2026-11-29T19:00:00Z)"},
		{"no since", Holder{PID: 7}, "pid 7", "scheduler is held by pid 7"},
		{"unknown", Holder{}, "unknown process", "scheduler is held by another process"},
	} {
		t.Run(tc.label, func(t *testing.T) {
			t.Parallel()
			if got := tc.h.String(); got != tc.str {
				t.Errorf("String() = %q, want %q", got, tc.str)
			}
			err := error(&HeldError{Name: "scheduler", Holder: tc.h})
			if got := err.Error(); got != tc.errStr {
				t.Errorf("Error() = %q, want %q", got, tc.errStr)
			}
			if !errors.Is(err, ErrHeld) {
				t.Error("HeldError is not ErrHeld")
			}
		})
	}
}
