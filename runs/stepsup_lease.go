package runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/cairnhq/cairn/internal/ids"
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

// leaseStepLock is a step's lease, renewed in the background.
type leaseStepLock struct {
	st        StepStore
	spec      stepLeaseSpec
	runID     string
	interrupt context.CancelCauseFunc // stops the command

	mu      sync.Mutex // guards lease and lost; held across a renewal
	lease   store.Lease
	renewed time.Time
	lost    error

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
	name, holder := stepKey(spec.RunID), ids.New("hold")
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
		cur, err := st.GetLease(ctx, name)
		if errors.Is(err, store.ErrNotFound) || err == nil && !cur.Held(time.Now()) {
			var l store.Lease
			l, err = st.TakeLease(ctx, store.LeaseParams{Name: name, Holder: holder, PID: os.Getpid(), TTL: ls.Length})
			if err == nil {
				h := &leaseStepLock{st: st, spec: *ls, runID: spec.RunID, interrupt: interrupt, lease: l, renewed: time.Now(),
					stop: make(chan struct{}), done: make(chan struct{})}
				go h.watch()
				return h, nil
			}
		}
		if err != nil && !errors.Is(err, store.ErrLeaseHeld) && !errors.Is(err, store.ErrNotFound) {
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

// watch renews the lease every Renew and looks for a cancel request at
// least every second, until Unlock.
func (h *leaseStepLock) watch() {
	defer close(h.done)
	t := time.NewTicker(min(h.spec.Renew, time.Second))
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		if cs, err := h.st.RunClaims(context.Background(), []string{h.runID}); err == nil && len(cs) == 1 && cs[0].CancelRequested {
			h.interrupt(errCancelRequested)
		}
		h.mu.Lock()
		due := time.Since(h.renewed) >= h.spec.Renew
		h.mu.Unlock()
		if due {
			if err := h.renew(); errors.Is(err, errStepLeaseLost) {
				h.interrupt(err)
			}
		}
	}
}

// renew renews the lease now; errStepLeaseLost once another took it.
func (h *leaseStepLock) renew() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost != nil {
		return h.lost
	}
	now := time.Now()
	l, err := h.st.TakeLease(context.Background(), store.LeaseParams{Name: h.lease.Name, Holder: h.lease.Holder, PID: os.Getpid(),
		Epoch: h.lease.Epoch, Now: now, TTL: h.spec.Length})
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		h.lost = fmt.Errorf("%w: %v", errStepLeaseLost, err)
		return h.lost
	case err != nil:
		return err // the lease holds while nobody takes it over: next time
	}
	h.lease, h.renewed = l, now
	return nil
}

func (h *leaseStepLock) confirm() error { return h.renew() }

// Unlock stops the renewals, releases the lease and closes the store.
func (h *leaseStepLock) Unlock() error {
	var err error
	h.once.Do(func() {
		close(h.stop)
		<-h.done
		h.mu.Lock()
		if h.lost == nil {
			err = h.st.ReleaseLease(context.Background(), h.lease.Fence())
		}
		h.mu.Unlock()
		err = errors.Join(err, h.st.Close())
	})
	return err
}
