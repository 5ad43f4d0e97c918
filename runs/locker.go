package runs

import (
	"errors"
	"os"
	"sync"

	"github.com/cairnhq/cairn/internal/wake"
	"github.com/cairnhq/cairn/locks"
)

// runTable is the lock table (in the workspace's locks folder) holding
// every run's lock.
const runTable = "runs"

// locker takes run locks, by run id: keys of the lock table locks/runs,
// or an in-process set.
type locker interface {
	tryLock(runID string) (unlocker, error)
	isHeld(runID string) (bool, error)
	// close lets go of what the locker keeps open; it may be used again
	// after.
	close()
}

type unlocker interface{ Unlock() error }

// fileLocker takes run locks in the table locks/runs, opened at first use.
type fileLocker struct {
	dir string
	mu  sync.Mutex
	t   *locks.Table
}

func (f *fileLocker) table(create bool) (*locks.Table, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.t != nil {
		return f.t, nil
	}
	open := locks.OpenExistingTable
	if create {
		open = locks.OpenTable
	}
	t, err := open(f.dir, runTable)
	if err != nil {
		return nil, err
	}
	f.t = t
	return t, nil
}

func (f *fileLocker) tryLock(id string) (unlocker, error) {
	t, err := f.table(true)
	if err != nil {
		return nil, err
	}
	l, err := t.TryLock(id)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (f *fileLocker) isHeld(id string) (bool, error) {
	t, err := f.table(false)
	if errors.Is(err, locks.ErrNoTable) {
		return false, nil // no run was ever locked here
	}
	if err != nil {
		return false, err
	}
	return t.Held(id)
}

func (f *fileLocker) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.t != nil {
		f.t.Close()
		f.t = nil
	}
}

type memLocker struct {
	mu   sync.Mutex
	held map[string]bool
}

func newMemLocker() *memLocker { return &memLocker{held: map[string]bool{}} }

func (m *memLocker) tryLock(id string) (unlocker, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[id] {
		return nil, &locks.HeldError{Name: id, Holder: locks.Holder{PID: os.Getpid()}}
	}
	m.held[id] = true
	return &memLock{m: m, id: id}, nil
}

func (m *memLocker) isHeld(id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held[id], nil
}

func (m *memLocker) close() {}

type memLock struct {
	m    *memLocker
	id   string
	once sync.Once
}

func (l *memLock) Unlock() error {
	l.once.Do(func() {
		l.m.mu.Lock()
		delete(l.m.held, l.id)
		l.m.mu.Unlock()
	})
	return nil
}

// watchExit watches the exit of a process holding run locks: a key of the
// table is held through an open file description that only its process
// has (close-on-exec, never inherited), so the lock is free once the
// process has exited.
func (f *fileLocker) watchExit(pid int) (*wake.Exit, error) { return wake.WatchExit(pid) }
