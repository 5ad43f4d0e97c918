package runs

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/cairnhq/cairn/internal/wake"
)

// The peer loop waits rather than polls when the store and the locker let
// it: a commit by any process wakes it (the store's commit watch), the
// exit of a process that owns a run wakes it (the locker's exit watch:
// the run's lock is free from that instant), and a timer wakes it when the
// next durable sleep ends (the store's NextWake). Between those it makes
// no system call, so an idle peer costs nothing. A commit is looked at
// with one indexed query (the changes since the last one seen), at most
// every AdoptEvery, and a pass runs only when a run changed; a sweep every
// sweepEvery catches what no event tells (a lock let go by a live owner
// that failed to write). Stores or lockers without these (the memory
// store, a lease locker) keep the poll every AdoptEvery.

// commitWatcher is a store that tells of commits made by any process
// (sqlite.Store).
type commitWatcher interface {
	WatchCommits() (c <-chan struct{}, stop func(), err error)
}

// nextWaker is a store that tells the earliest wake time of its waiting
// runs (zero: none).
type nextWaker interface {
	NextWake(ctx context.Context) (time.Time, error)
}

// exitWatcher is a locker whose locks belong to a process on this machine
// and are free once it exits, so that waiting on the owner's exit is
// waiting on its run's lock.
type exitWatcher interface {
	watchExit(pid int) (*wake.Exit, error)
}

// sweepPolls is how many AdoptEvery periods a waiting peer lets pass
// without a pass at most.
const sweepPolls = 50

// peerWaits is what a waiting peer loop waits on.
type peerWaits struct {
	e       *Engine
	commits <-chan struct{}
	stop    func()
	exits   exitWatcher
	wakes   nextWaker
	owners  map[int]*wake.Exit // live owners of runs this peer saw held
	exited  chan struct{}      // an owner exited
	checked time.Time          // last look at the store's changes
}

// newPeerWaits returns the waits of e, or nil when e must poll.
func (e *Engine) newPeerWaits() *peerWaits {
	cw, ok1 := e.st.(commitWatcher)
	nw, ok2 := e.st.(nextWaker)
	xw, ok3 := e.locker.(exitWatcher)
	if !ok1 || !ok2 || !ok3 {
		return nil
	}
	c, stop, err := cw.WatchCommits()
	if err != nil {
		e.log.Info("peer polls the store", "why", err)
		return nil
	}
	return &peerWaits{e: e, commits: c, stop: stop, exits: xw, wakes: nw, owners: map[int]*wake.Exit{}, exited: make(chan struct{}, 1)}
}

func (w *peerWaits) close() {
	w.stop()
	for pid, x := range w.owners {
		x.Stop()
		delete(w.owners, pid)
	}
}

// track watches the owners the last pass found holding runs (nil: the
// pass listed none, keep the watches). It reports whether a pass should
// follow at once: an owner is gone already, or could not be watched.
func (w *peerWaits) track(owners map[int]string) (again bool) {
	if owners == nil {
		return false
	}
	for pid, x := range w.owners {
		if _, ok := owners[pid]; !ok {
			x.Stop()
			delete(w.owners, pid)
		}
	}
	for pid, runID := range owners {
		if _, ok := w.owners[pid]; ok {
			continue
		}
		x, err := w.exits.watchExit(pid)
		if err != nil {
			if !errors.Is(err, os.ErrProcessDone) {
				w.e.log.Warn("watch a run's owner", "pid", pid, "err", err)
			}
			again = true
			continue
		}
		w.owners[pid] = x
		go func() {
			<-x.Done()
			select {
			case w.exited <- struct{}{}:
			default:
			}
		}()
		// It may have died between the pass's lock test and the watch,
		// and its pid be reused: the lock tells.
		if held, err := w.e.locker.isHeld(runID); err != nil || !held {
			again = true
		}
	}
	return again
}

// wait blocks until a pass is due; false when ctx ended. again asks for
// a pass after at most AdoptEvery.
func (w *peerWaits) wait(ctx context.Context, seen *changeTracker, again bool) bool {
	e := w.e
	start := e.now()
	due := start.Add(sweepPolls * e.opts.AdoptEvery)
	if again {
		due = start.Add(e.opts.AdoptEvery)
	}
	if at, err := w.wakes.NextWake(ctx); err == nil && !at.IsZero() && at.Before(due) {
		due = at
	}
	pending := false // a commit not looked at yet
	for {
		wakeAt := due
		if look := w.checked.Add(e.opts.AdoptEvery); pending && look.Before(due) {
			wakeAt = look
		}
		t := e.clk.NewTimer(max(wakeAt.Sub(e.now()), 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-e.kick:
			t.Stop()
			return true
		case <-w.exited:
			t.Stop()
			return true
		case <-w.commits:
			t.Stop()
			pending = true
		case <-t.C():
		}
		now := e.now()
		if !now.Before(due) {
			return true
		}
		if pending && now.Sub(w.checked) >= e.opts.AdoptEvery {
			pending, w.checked = false, now
			if e.noticeChanges(ctx, seen) > 0 {
				return true
			}
		}
	}
}
