// Package wake turns what other processes do into channel sends, so that
// a peer waits instead of polling: a write to a file of a folder (the
// SQLite WAL, a run's journal) and the exit of a process (a run's owner).
// Both use the runtime's poller (inotify and pidfd on Linux): a waiter
// holds no thread and costs nothing while nothing happens.
//
// Where the kernel offers neither, the constructors return an error
// wrapping errors.ErrUnsupported and callers keep polling.
package wake

import (
	"strings"
	"sync"
)

// Dir tells of writes to the files of one folder (not its subfolders).
// It is safe for concurrent use.
type Dir struct {
	impl dirImpl

	mu   sync.Mutex
	subs map[*Sub]struct{}
	err  error // set once the watch ended
}

// Sub is one subscription to a Dir: C gets a value (coalesced) after a
// file whose name starts with the prefix was written, created or renamed
// into the folder.
type Sub struct {
	d      *Dir
	prefix string
	c      chan struct{}
}

// C is sent on (without blocking: one pending value at most) after each
// batch of matching events.
func (s *Sub) C() <-chan struct{} { return s.c }

// Close ends the subscription. It is idempotent.
func (s *Sub) Close() {
	s.d.mu.Lock()
	delete(s.d.subs, s)
	s.d.mu.Unlock()
}

// WatchDir starts watching dir for files written, created, deleted or
// moved. Close it when done.
func WatchDir(dir string) (*Dir, error) { return watch(dir, true) }

// WatchDirEntries is WatchDir for files created, deleted or moved only,
// not written: a watch that stays asleep while a database commits.
func WatchDirEntries(dir string) (*Dir, error) { return watch(dir, false) }

func watch(dir string, writes bool) (*Dir, error) {
	d := &Dir{subs: map[*Sub]struct{}{}}
	impl, err := watchDir(dir, writes, d.deliver, d.end)
	if err != nil {
		return nil, err
	}
	d.impl = impl
	return d, nil
}

// Subscribe returns a subscription to writes of the files whose name
// starts with prefix ("" for every file).
func (d *Dir) Subscribe(prefix string) *Sub {
	s := &Sub{d: d, prefix: prefix, c: make(chan struct{}, 1)}
	d.mu.Lock()
	d.subs[s] = struct{}{}
	d.mu.Unlock()
	return s
}

// Err reports why the watch ended (the folder was removed, the watch
// overflowed and was closed, Close), or nil while it runs. A subscriber
// that sees an error falls back to polling.
func (d *Dir) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// Close ends the watch; subscriptions get no more values.
func (d *Dir) Close() error { return d.impl.close() }

// deliver wakes the subscribers of the files named; an empty list wakes
// all of them (an overflow: anything may have changed).
func (d *Dir) deliver(names []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for s := range d.subs {
		hit := len(names) == 0
		for _, n := range names {
			if strings.HasPrefix(n, s.prefix) {
				hit = true
				break
			}
		}
		if hit {
			select {
			case s.c <- struct{}{}:
			default:
			}
		}
	}
}

// end records why the watch ended and wakes everyone, so that they notice.
func (d *Dir) end(err error) {
	d.mu.Lock()
	d.err = err
	d.mu.Unlock()
	d.deliver(nil)
}

type dirImpl interface{ close() error }

// Exit is a watch of one process's exit.
type Exit struct {
	done chan struct{}
	stop func()
}

// Done is closed when the process has exited (or when the watch failed
// or was stopped: check again what you were waiting for).
func (x *Exit) Done() <-chan struct{} { return x.done }

// Stop ends the watch; Done is closed. It is idempotent.
func (x *Exit) Stop() { x.stop() }

// WatchExit watches process pid. An error wrapping os.ErrProcessDone
// (hard to tell from ESRCH) says it is gone already.
func WatchExit(pid int) (*Exit, error) { return watchExit(pid) }
