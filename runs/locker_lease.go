package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

// leaseLocker takes run locks as store leases (leases mode): run id's
// lease is run:<id>, a step key's (stepKey) its own name. A lock is held
// while its lease is renewed, every LeaseTimes.Renew, by this process;
// once unrenewed past LeaseTimes.Length (the process or its machine died,
// or it is stuck) any peer takes it. The lock of a run is not what fences
// its writes (the run's claim is), so a holder that lost its lease
// without noticing yet cannot write over its successor.
type leaseLocker struct {
	st    store.LeaseStore
	clk   clock.Clock
	times LeaseTimes
	pid   int
	log   *slog.Logger

	mu   sync.Mutex
	held map[*leaseLock]struct{}
}

func newLeaseLocker(st store.LeaseStore, clk clock.Clock, times LeaseTimes, pid int, log *slog.Logger) *leaseLocker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &leaseLocker{st: st, clk: clock.OrReal(clk), times: times.withDefaults(), pid: pid, log: log, held: map[*leaseLock]struct{}{}}
}

// leaseName is the lease of a lock key.
func leaseName(key string) string {
	if strings.HasPrefix(key, "step:") {
		return key
	}
	return "run:" + key
}

// heldError is the *locks.HeldError of a lease another holder keeps.
func heldError(key string, l store.Lease) error {
	return &locks.HeldError{Name: key, Holder: locks.Holder{PID: l.PID, Since: l.Since}}
}

func (f *leaseLocker) tryLock(key string) (unlocker, error) {
	ctx := context.Background()
	name, now := leaseName(key), f.clk.Now()
	// Read first: a peer loop tries every running run, and most are held;
	// a read costs no write transaction.
	cur, err := f.st.GetLease(ctx, name)
	switch {
	case err == nil && cur.Held(now):
		return nil, heldError(key, cur)
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("lock %s: %w", key, err)
	}
	l, err := f.st.TakeLease(ctx, store.LeaseParams{Name: name, Holder: ids.New("hold"), PID: f.pid, Now: now, TTL: f.times.Length})
	var lh *store.LeaseHeldError
	if errors.As(err, &lh) {
		return nil, heldError(key, lh.Lease)
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", key, err)
	}
	h := &leaseLock{f: f, key: key, lease: l, stop: make(chan struct{}), done: make(chan struct{})}
	f.mu.Lock()
	f.held[h] = struct{}{}
	f.mu.Unlock()
	go h.renewLoop(f.clk.NewTimer(f.times.Renew))
	return h, nil
}

func (f *leaseLocker) isHeld(key string) (bool, error) {
	l, err := f.st.GetLease(context.Background(), leaseName(key))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("test lock %s: %w", key, err)
	}
	return l.Held(f.clk.Now()), nil
}

// close releases what is still held (nothing, once every execution
// ended).
func (f *leaseLocker) close() {
	f.mu.Lock()
	hs := make([]*leaseLock, 0, len(f.held))
	for h := range f.held {
		hs = append(hs, h)
	}
	f.mu.Unlock()
	for _, h := range hs {
		h.Unlock()
	}
}

// leaseLock is a lease held and renewed in the background until Unlock.
type leaseLock struct {
	f          *leaseLocker
	key        string
	lease      store.Lease // written by renewLoop only, read after done
	stop, done chan struct{}
	once       sync.Once
}

func (h *leaseLock) renewLoop(t clock.Timer) {
	defer close(h.done)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C():
		}
		l, err := h.f.st.TakeLease(context.Background(), store.LeaseParams{Name: h.lease.Name, Holder: h.lease.Holder, PID: h.f.pid,
			Epoch: h.lease.Epoch, Now: h.f.clk.Now(), TTL: h.f.times.Length})
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			// Taken over: the run's claim tells its execution (watchOwned).
			h.f.log.Warn("lease lost", "lock", h.key, "err", err)
			return
		case err != nil:
			// A busy or unreachable store: try again at the next period;
			// the lease holds as long as nobody took it over.
			h.f.log.Warn("renew lease", "lock", h.key, "err", err)
		default:
			h.lease = l
		}
		t.Reset(h.f.times.Renew)
	}
}

// Unlock stops the renewals and releases the lease, so the next peer
// need not wait for it to expire. It is idempotent.
func (h *leaseLock) Unlock() error {
	var err error
	h.once.Do(func() {
		close(h.stop)
		<-h.done
		h.f.mu.Lock()
		delete(h.f.held, h)
		h.f.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err = h.f.st.ReleaseLease(ctx, h.lease.Fence()); err != nil {
			err = fmt.Errorf("unlock %s: %w", h.key, err)
		}
	})
	return err
}
