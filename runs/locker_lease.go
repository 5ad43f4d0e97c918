package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

// leaseLocker takes run locks as store leases (leases mode): run id's
// lease is run:<id>, a step key's (stepKey) its own name. Each is a
// lease-only locks.Duty: held while this process renews it, every
// LeaseTimes.Renew; once unrenewed past LeaseTimes.Length (the process or
// its machine died, or it is stuck) any peer takes it. The lock of a run
// is not what fences its writes (the run's claim is), so a holder that
// lost its lease without noticing yet cannot write over its successor,
// and its execution stops once it sees the claim replaced (watchOwned).
type leaseLocker struct {
	st    store.LeaseStore
	clk   clock.Clock
	times LeaseTimes
}

func newLeaseLocker(st store.LeaseStore, clk clock.Clock, times LeaseTimes) *leaseLocker {
	return &leaseLocker{st: st, clk: clock.OrReal(clk), times: times.withDefaults()}
}

// leaseName is the lease of a lock key.
func leaseName(key string) string {
	if strings.HasPrefix(key, "step:") {
		return key
	}
	return "run:" + key
}

// duty is the lease-only duty of a lock key.
func (f *leaseLocker) duty(key string) *locks.Duty {
	return locks.NewDuty(locks.DutyConfig{Name: leaseName(key), Leases: f.st, Clock: f.clk, Lease: f.times.Length, Renew: f.times.Renew, LeaseOnly: true})
}

func (f *leaseLocker) tryLock(key string) (unlocker, error) {
	// Read first: a peer loop tries every running run, and most are held;
	// a read costs no write transaction.
	if l, held, err := f.current(key); err != nil || held {
		if err == nil {
			err = &locks.HeldError{Name: key, Holder: locks.Holder{PID: l.PID, Since: l.Since}}
		}
		return nil, err
	}
	h, err := f.duty(key).TryTake(context.Background())
	if err != nil {
		return nil, err
	}
	return holdingLock{h}, nil
}

func (f *leaseLocker) isHeld(key string) (bool, error) {
	_, held, err := f.current(key)
	return held, err
}

// current reads key's lease and whether it is held now.
func (f *leaseLocker) current(key string) (store.Lease, bool, error) {
	l, err := f.st.GetLease(context.Background(), leaseName(key))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return l, false, nil
	case err != nil:
		return l, false, fmt.Errorf("test lock %s: %w", key, err)
	}
	return l, l.Held(f.clk.Now()), nil
}

// close does nothing: every holding is released by its execution.
func (f *leaseLocker) close() {}

// holdingLock unlocks by releasing the holding: its renewals stop and the
// next peer need not wait for the lease to expire.
type holdingLock struct{ h *locks.Holding }

func (l holdingLock) Unlock() error { return l.h.Release() }
