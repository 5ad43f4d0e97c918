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

// errStepLeaseLost stops a supervisor whose lease another supervisor took
// (this one was frozen past its lease): the step is that one's now.
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
				l := &leaseStepLock{st: st, h: h, runID: spec.RunID, every: min(ls.Renew, time.Second), interrupt: interrupt,
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
// most a second), and stops the command when the request is there or the
// lease was lost, until Unlock.
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
		if cs, err := l.st.RunClaims(context.Background(), []string{l.runID}); err == nil && len(cs) == 1 && cs[0].CancelRequested {
			l.interrupt(errCancelRequested)
		}
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
