package locks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/ids"
)

// Lock is a held lock. Keep it reachable until Unlock: a Lock dropped
// without Unlock is released when the garbage collector closes its file.
// A Lock is safe for concurrent use.
type Lock struct {
	name string
	path string

	mu sync.Mutex
	fl *flock.Flock // nil once released
	w  *os.File     // the same inode, opened for writing the record
}

// Name returns the lock's name.
func (l *Lock) Name() string { return l.name }

// Unlock clears the holder record and releases the lock. It is idempotent
// (and a no-op on a nil Lock). If releasing fails, a later Unlock tries
// again.
func (l *Lock) Unlock() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fl == nil {
		return nil
	}
	var errs []error
	if l.w != nil {
		// Clear the record first: once released, the file must not name
		// us. The lock file itself stays.
		if err := l.w.Truncate(0); err != nil {
			errs = append(errs, fmt.Errorf("clear holder record: %w", err))
		}
		if err := l.w.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close lock file: %w", err))
		}
		l.w = nil
	}
	if err := l.fl.Unlock(); err != nil {
		errs = append(errs, err)
		return fmt.Errorf("unlock %s: %w", l.name, errors.Join(errs...))
	}
	l.fl = nil
	if len(errs) > 0 {
		return fmt.Errorf("unlock %s: %w", l.name, errors.Join(errs...))
	}
	return nil
}

// TryLock takes the lock name in dir without waiting. dir is created 0700
// if missing, the lock file 0600. When another Lock (in this or another
// process) holds it, the error is a *HeldError (errors.Is(err, ErrHeld))
// naming the holder. An invalid name is refused with an *ids.InvalidError
// before anything is created.
func TryLock(dir, name string) (*Lock, error) {
	return tryLock(dir, name, nil)
}

// Acquire takes the lock name in dir, waiting while it is held by polling
// with a backoff from 10 ms to 250 ms. When ctx ends first, the error wraps
// both the context's error (errors.Is(err, context.DeadlineExceeded)) and
// the *HeldError naming the holder.
func Acquire(ctx context.Context, dir, name string) (*Lock, error) {
	if err := context.Cause(ctx); err != nil {
		return nil, fmt.Errorf("acquire lock %s: %w", name, err)
	}
	path, err := lockPath(dir, name)
	if err != nil {
		return nil, err
	}
	if err := makeDir(dir); err != nil {
		return nil, err
	}
	delay := minPoll
	for {
		l, err := take(path, name, nil)
		if !errors.Is(err, errBusy) {
			return l, err
		}
		t := wall.NewTimer(delay/2 + rand.N(delay/2+1)) // jitter keeps waiters apart
		select {
		case <-ctx.Done():
			t.Stop()
			held := &HeldError{Name: name, Holder: readHolder(path)}
			return nil, fmt.Errorf("acquire lock: %w: %w", context.Cause(ctx), held)
		case <-t.C():
		}
		delay = min(2*delay, maxPoll)
	}
}

// wall is the clock locks read for the holder record's time and for
// Acquire's and readHolder's waits. The kernel lock, not this clock,
// decides who holds a lock, so the tests of waiting use real processes.
var wall clock.Clock = clock.Real{}

// Poll bounds for Acquire.
const (
	minPoll = 10 * time.Millisecond
	maxPoll = 250 * time.Millisecond
)

// Describe tells whether the lock name in dir is held and, if so, by whom.
// held is decided by the kernel lock: Describe tries the lock and releases
// it at once when that succeeds (so, for that instant, a competing TryLock
// can fail). A lock file that does not exist is not held; Describe creates
// nothing. The Holder is zero when held but the holder did not say who it is.
func Describe(dir, name string) (h Holder, held bool, err error) {
	path, err := lockPath(dir, name)
	if err != nil {
		return Holder{}, false, err
	}
	fl := flock.New(path, flock.SetFlag(os.O_RDONLY|openNoFollow))
	ok, err := fl.TryLock()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Holder{}, false, nil
	case err != nil:
		return Holder{}, false, fmt.Errorf("describe lock %s: %w", name, err)
	case ok:
		if err := fl.Unlock(); err != nil {
			return Holder{}, false, fmt.Errorf("describe lock %s: %w", name, err)
		}
		return Holder{}, false, nil
	}
	return readHolder(path), true, nil
}

// errBusy is take's answer when the lock is held; callers turn it into a
// *HeldError.
var errBusy = errors.New("busy")

// maxReplaced bounds how often take starts over because the lock file was
// replaced between opening and locking it.
const maxReplaced = 8

// hooks lets tests act between the steps of take.
type hooks struct {
	afterFlock func(path string) // the file at path is locked, not yet verified
}

func tryLock(dir, name string, h *hooks) (*Lock, error) {
	path, err := lockPath(dir, name)
	if err != nil {
		return nil, err
	}
	if err := makeDir(dir); err != nil {
		return nil, err
	}
	l, err := take(path, name, h)
	if errors.Is(err, errBusy) {
		return nil, &HeldError{Name: name, Holder: readHolder(path)}
	}
	return l, err
}

// lockPath validates name and returns the lock file's path in dir.
func lockPath(dir, name string) (string, error) {
	if err := ids.Validate("lock name", name); err != nil {
		return "", err
	}
	if dir == "" {
		return "", fmt.Errorf("lock %s: no lock directory given", name)
	}
	return filepath.Join(dir, name), nil
}

func makeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create lock directory: %w", err)
	}
	return nil
}

// take makes one attempt at locking path, returning errBusy if it is held.
func take(path, name string, h *hooks) (*Lock, error) {
	for range maxReplaced {
		// gofrs/flock opens with os.OpenFile, which adds O_CLOEXEC.
		fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDONLY|openNoFollow), flock.SetPermissions(0o600))
		ok, err := fl.TryLock()
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		if !ok {
			return nil, errBusy
		}
		if h != nil && h.afterFlock != nil {
			h.afterFlock(path)
		}
		w, err := openLocked(path, fl)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("lock %s: %w", name, err), fl.Unlock())
		}
		if w == nil {
			// The path names another file now: the one we locked was
			// removed or replaced. Lock the current one instead.
			if err := fl.Unlock(); err != nil {
				return nil, fmt.Errorf("lock %s: %w", name, err)
			}
			continue
		}
		l := &Lock{name: name, path: path, fl: fl, w: w}
		if err := l.writeRecord(wall.Now()); err != nil {
			return nil, errors.Join(err, l.Unlock())
		}
		return l, nil
	}
	return nil, fmt.Errorf("lock %s: lock file %s keeps being replaced", name, path)
}

// openLocked opens path for writing and checks that it is the file fl has
// locked (same device and inode): opening the path after locking and
// comparing with the locked descriptor proves the path still names the
// locked file. It returns a nil file, and no error, when it does not.
func openLocked(path string, fl *flock.Flock) (*os.File, error) {
	locked, err := fl.Stat() // the locked descriptor, not the path
	if err != nil {
		return nil, fmt.Errorf("stat locked file: %w", err)
	}
	if !locked.Mode().IsRegular() {
		return nil, fmt.Errorf("lock file %s is not a regular file", path)
	}
	w, err := os.OpenFile(path, os.O_WRONLY|openNoFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	now, err := w.Stat()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("stat lock file: %w", err), w.Close())
	}
	if !os.SameFile(locked, now) {
		return nil, w.Close()
	}
	if now.Mode().Perm() != 0o600 {
		if err := w.Chmod(0o600); err != nil {
			return nil, errors.Join(fmt.Errorf("chmod lock file: %w", err), w.Close())
		}
	}
	return w, nil
}

// writeRecord replaces the holder record in the lock file. It is not
// fsynced: the record only describes a live process, and after a crash of
// the machine every lock is free anyway.
func (l *Lock) writeRecord(now time.Time) error {
	b, err := json.Marshal(newRecord(now))
	if err != nil {
		return fmt.Errorf("encode holder record: %w", err)
	}
	b = append(b, '\n')
	if err := l.w.Truncate(0); err != nil {
		return fmt.Errorf("write holder record: %w", err)
	}
	if _, err := l.w.WriteAt(b, 0); err != nil {
		return fmt.Errorf("write holder record: %w", err)
	}
	return nil
}
