package runs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

// In leases mode a step supervisor holds its step's lease (step:<run> in
// the store) instead of the lock table's key, renews it for as long as it
// lives, and also watches the run's cancel request itself: an owner on
// another machine, or a frozen one, cannot signal it, the store can.

// stepLeaseSpec is what a leases-mode supervisor opens and how long its
// lease lasts; nil in a stepSpec of lock-files mode.
type stepLeaseSpec struct {
	Store  StoreRef      `json:"store"`
	Length time.Duration `json:"length"`
	Renew  time.Duration `json:"renew"`
}

// stepLeaseSpec is the supervisors' lease spec of e; nil unless leases mode.
func (e *Engine) stepLeaseSpec() *stepLeaseSpec {
	if !e.opts.leases() || e.opts.InMemory {
		return nil
	}
	return &stepLeaseSpec{Store: e.opts.StoreRef, Length: e.opts.Leases.Length, Renew: e.opts.Leases.Renew}
}

// stepLeaseWatchEvery is how often a supervisor renewing every renew
// looks at its lease and the run's cancel request.
func stepLeaseWatchEvery(renew time.Duration) time.Duration { return min(renew, time.Second) }

// errStepLeaseLost stops a supervisor whose lease another supervisor took
// (this one was frozen past its lease), or that could not renew it in
// time: the step is, or may be, another's now. Its command is killed at
// once (no grace) and it records no result: the call is ambiguous.
var errStepLeaseLost = errors.New("the step's lease was lost to another supervisor")

// stepLock is the hold a supervisor has on its step.
type stepLock interface {
	Unlock() error
	// confirm makes sure, just before the result is written, that the
	// step is still this supervisor's: after an error it writes nothing.
	confirm() error
}

// tableStepLock is a key of the lock table: the kernel keeps it while
// the process lives.
type tableStepLock struct{ *locks.KeyLock }

func (tableStepLock) confirm() error { return nil }

// leaseStepLock is a step's lease: a lease-only locks.Duty renewed in the
// background, and a watch of the run's cancel request.
type leaseStepLock struct {
	st        StepStore
	h         *locks.Holding
	runID     string
	length    time.Duration           // the lease's
	every     time.Duration           // how often the cancel request is read
	interrupt context.CancelCauseFunc // stops the command

	stop, done chan struct{}
	once       sync.Once
}

// lockStepLease opens the store and takes the step's lease, waiting while
// another supervisor's lease is current (one that died frees it at its
// expiry).
func lockStepLease(ctx context.Context, spec stepSpec, interrupt context.CancelCauseFunc) (*leaseStepLock, error) {
	ls := spec.Lease
	open := storeOpener(ls.Store.Kind)
	if open == nil {
		return nil, fmt.Errorf("lock step %s: no opener for store kind %q", spec.Step, ls.Store.Kind)
	}
	st, err := open(ctx, ls.Store.Source)
	if err != nil {
		return nil, fmt.Errorf("lock step %s: open store: %w", spec.Step, err)
	}
	locker := newLeaseLocker(st, nil, LeaseTimes{Length: ls.Length, Renew: ls.Renew})
	key := stepKey(spec.RunID)
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
		held, err := locker.isHeld(key) // a read: no write while another holds it
		if err == nil && !held {
			var h *locks.Holding
			if h, err = locker.duty(key).TryTake(ctx); err == nil {
				l := &leaseStepLock{st: st, h: h, runID: spec.RunID, length: ls.Length, every: stepLeaseWatchEvery(ls.Renew), interrupt: interrupt,
					stop: make(chan struct{}), done: make(chan struct{})}
				go l.watch()
				return l, nil
			}
		}
		if err != nil && !errors.Is(err, locks.ErrHeld) {
			st.Close()
			return nil, fmt.Errorf("lock step %s: %w", spec.Step, err)
		}
		select {
		case <-ctx.Done():
			st.Close()
			return nil, fmt.Errorf("lock step %s: %w", spec.Step, context.Cause(ctx))
		case <-time.After(delay): // another machine's supervisor: only its lease's expiry tells
		}
	}
}

// watch reads the run's cancel request every few hundred milliseconds (at
// most a second), and stops the command when the request is there, when
// the lease was lost, or when it lapsed (unrenewed for its length: the
// store cannot be reached, or this process was stopped) and cannot be
// renewed at once: a peer may have taken the step over and started it
// again; until Unlock.
func (l *leaseStepLock) watch() {
	defer close(l.done)
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.h.Lost():
			l.interrupt(fmt.Errorf("%w: %v", errStepLeaseLost, l.h.Err()))
			return
		case <-t.C:
		}
		if l.h.Lapsed() && !l.renewedWithin(l.every) {
			l.interrupt(fmt.Errorf("%w: it was not renewed for %s", errStepLeaseLost, l.length))
			return
		}
		if cs, err := l.st.RunClaims(context.Background(), []string{l.runID}); err == nil && len(cs) == 1 && cs[0].CancelRequested {
			l.interrupt(errCancelRequested)
		}
	}
}

// renewedWithin renews a lapsed lease now and reports whether that
// succeeded within d: then nobody took the lease meanwhile (a take moves
// its epoch on, and a renewal of the old epoch fails), so no other
// supervisor started the step, and the command may go on (this process
// was only stopped for a while). A renewal that hangs (the store cannot
// be reached, a renewal in flight holds the holding) is not waited for.
func (l *leaseStepLock) renewedWithin(d time.Duration) bool {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		done <- l.h.Renew(ctx)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err == nil && !l.h.Lapsed()
	case <-t.C:
		return false
	}
}

// confirm renews the lease now. A store that cannot answer is no loss as
// long as the latest renewal is recent enough that nobody can have taken
// the lease over.
func (l *leaseStepLock) confirm() error {
	err := l.h.Renew(context.Background())
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		return fmt.Errorf("%w: %v", errStepLeaseLost, err)
	case err != nil && !l.h.Current():
		return fmt.Errorf("confirm the step's lease: %w", err)
	}
	return nil
}

// Unlock stops the watch, releases the lease and closes the store.
func (l *leaseStepLock) Unlock() error {
	var err error
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		err = errors.Join(l.h.Release(), l.st.Close())
	})
	return err
}
