package locks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// A duty is work exactly one peer of a workspace does at a time (the
// scheduler, the worker). Life is not liveness: a holder of the duty's
// lock file can be alive and stuck (SIGSTOP, Ctrl-Z, a hung disk), and
// the kernel keeps its lock for it. So a duty is the lock file plus a
// lease in the store (store.Lease) that its holder renews every
// DutyConfig.Renew. A peer that finds the lock file held but the lease
// unrenewed past its expiry takes the duty over anyway; the holder, once
// it runs again, fails to renew, learns it lost the duty (Holding.Lost)
// and stops doing it. Writes the duty makes carry the holding's fence
// (Holding.Fence), which the store checks in the write's own transaction,
// so a holder that has not noticed yet cannot write with a lost lease.
//
// With the defaults (a 5 s lease renewed every second) a frozen holder's
// duty moves within about 6 s of its last renewal. The lock file stays the
// fast path: a dead holder's lock is free at once, and a peer that holds
// the lock file may take a lease whose holder held it too (it has let go).

// DefaultLease is the default lease length of a duty.
const DefaultLease = 5 * time.Second

// DutyConfig configures a Duty.
type DutyConfig struct {
	Dir    string // the lock folder
	Name   string // the duty and its lock file: "scheduler", "worker"
	Leases store.LeaseStore
	Clock  clock.Clock // nil: the real clock
	// Lease is how long a lease lasts unrenewed (default DefaultLease);
	// Renew how often the holder renews it (default a fifth of Lease).
	Lease time.Duration
	Renew time.Duration
	// LeaseOnly leaves the lock file out: the lease alone decides (peers
	// on several machines, where lock files do not reach each other).
	LeaseOnly bool
}

// Duty takes and holds one duty. It is safe for concurrent use.
type Duty struct {
	cfg DutyConfig
	// unreleased is the fence of this process's latest holding whose
	// lease could not be released (its store could not write: a full
	// disk); the next take releases it first, so this process need not
	// wait for its own lease to expire.
	mu         sync.Mutex
	unreleased *store.LeaseFence
	// onRenew, set by tests before any take, is told each background
	// renewal's result.
	onRenew func(error)
}

// NewDuty returns a duty; nothing is taken until TryTake.
func NewDuty(cfg DutyConfig) *Duty {
	cfg.Clock = clock.OrReal(cfg.Clock)
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Renew <= 0 {
		cfg.Renew = cfg.Lease / 5
	}
	return &Duty{cfg: cfg}
}

// DutyHeldError says another process does the duty. It wraps ErrHeld.
type DutyHeldError struct {
	Name string
	// Lock is who holds the lock file (zero when nobody does or it did
	// not say).
	Lock Holder
	// Lease is the current lease, or nil when the lock file's holder has
	// none (it holds the lock file only).
	Lease *store.Lease
}

func (e *DutyHeldError) Error() string {
	if e.Lease != nil && (e.Lock.PID == 0 || e.Lock.PID != e.Lease.PID) {
		return fmt.Sprintf("%s is done by pid %d (since %s)", e.Name, e.Lease.PID, e.Lease.Since.UTC().Format(time.RFC3339))
	}
	return (&HeldError{Name: e.Name, Holder: e.Lock}).Error()
}

func (e *DutyHeldError) Unwrap() error { return ErrHeld }

// TryTake makes one attempt at the duty: it returns a Holding, or a
// *DutyHeldError when another process holds the lock file and a lease
// that has not expired (or no lease at all), or a lease without the lock
// file. It reads the lease without writing unless it may take it.
func (d *Duty) TryTake(ctx context.Context) (*Holding, error) {
	d.releaseLeftover(ctx)
	now := d.cfg.Clock.Now()
	lock, err := d.tryLockFile()
	var held *HeldError
	switch {
	case errors.As(err, &held):
		cur, err := d.cfg.Leases.GetLease(ctx, d.cfg.Name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil, &DutyHeldError{Name: d.cfg.Name, Lock: held.Holder}
		case err != nil:
			return nil, fmt.Errorf("take duty %s: %w", d.cfg.Name, err)
		case cur.Holder == "":
			return nil, &DutyHeldError{Name: d.cfg.Name, Lock: held.Holder}
		case cur.Held(now):
			return nil, &DutyHeldError{Name: d.cfg.Name, Lock: held.Holder, Lease: &cur}
		}
		// The lock file's holder let its lease expire: take over.
	case err != nil:
		return nil, err
	}
	h := &Holding{d: d, lock: lock, holder: ids.New("hold"), stop: make(chan struct{}), done: make(chan struct{}), lost: make(chan struct{})}
	l, err := d.cfg.Leases.TakeLease(ctx, h.params(now, 0))
	if err != nil {
		uerr := lock.Unlock()
		var lh *store.LeaseHeldError
		if errors.As(err, &lh) {
			return nil, errors.Join(&DutyHeldError{Name: d.cfg.Name, Lease: &lh.Lease}, uerr)
		}
		return nil, errors.Join(fmt.Errorf("take duty %s: %w", d.cfg.Name, err), uerr)
	}
	h.lease, h.renewedAt = l, now
	h.renewed.Store(now.UnixNano())
	// The timer is made here, not in the goroutine, so that the first
	// renewal is due Renew after the take whatever the scheduling.
	go h.renewLoop(d.cfg.Clock.NewTimer(d.cfg.Renew))
	return h, nil
}

// TakeOrWatch takes the duty, or returns the *DutyHeldError once its
// holder shows it is making progress: when the lease is current it
// watches it, and a renewal ends the watch while a lease left to expire is
// taken over. So it returns within about one lease length. A holder
// without a lease counts as making progress.
func (d *Duty) TakeOrWatch(ctx context.Context) (*Holding, error) {
	var first *store.Lease
	for {
		h, err := d.TryTake(ctx)
		var he *DutyHeldError
		if !errors.As(err, &he) || he.Lease == nil {
			return h, err
		}
		if first == nil {
			first = he.Lease
		} else if he.Lease.Epoch != first.Epoch || !he.Lease.Renewed.Equal(first.Renewed) {
			return nil, err
		}
		t := d.cfg.Clock.NewTimer(max(d.cfg.Renew/4, time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("take duty %s: %w", d.cfg.Name, context.Cause(ctx))
		case <-t.C():
		}
	}
}

// Holding is a duty held: its lease is renewed in the background until
// Release, or until the lease is found lost (Lost).
type Holding struct {
	d      *Duty
	holder string

	stop, done chan struct{}
	lost       chan struct{} // closed when the lease is lost
	release    sync.Once
	releaseErr error

	mu        sync.Mutex // guards the fields below; held across a renewal
	lock      *Lock      // nil while another process holds the lock file
	lease     store.Lease
	renewedAt time.Time // when the latest renewal was asked, on our clock
	lostErr   error

	// renewed is renewedAt in Unix nanoseconds, read without mu (Lapsed).
	renewed atomic.Int64
}

func (h *Holding) params(now time.Time, epoch int64) store.LeaseParams {
	return store.LeaseParams{Name: h.d.cfg.Name, Holder: h.holder, PID: os.Getpid(), Flocked: h.lock != nil, Epoch: epoch, Now: now, TTL: h.d.cfg.Lease}
}

// Fence is what the duty's writes carry so the store refuses them once the
// lease is lost.
func (h *Holding) Fence() *store.LeaseFence {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.lease.Fence()
	return &f
}

// Lease returns the lease as last renewed.
func (h *Holding) Lease() store.Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease
}

// Lost is closed when the lease was found lost: another peer took the
// duty over. Err says why.
func (h *Holding) Lost() <-chan struct{} { return h.lost }

// Err returns why the holding was lost, or nil.
func (h *Holding) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lostErr
}

// Current reports whether, on this process's clock, the latest renewal is
// recent enough that nobody can have taken the duty over. A holder that
// was stopped for a while finds it false, and should Renew before it
// acts.
func (h *Holding) Current() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lostErr == nil && h.d.cfg.Clock.Now().Sub(h.renewedAt) < h.d.cfg.Lease
}

// Lapsed reports, without waiting for a renewal in flight (Current does:
// a renewal holds mu while the store answers, or hangs), whether the
// latest successful renewal is a lease's length old on this process's
// clock: another peer may take the duty now. A holder that acts on
// others' behalf (a step supervisor and its command) stops acting then.
func (h *Holding) Lapsed() bool {
	return h.d.cfg.Clock.Now().Sub(time.Unix(0, h.renewed.Load())) >= h.d.cfg.Lease
}

// Renew renews the lease now. When the lease was lost it closes Lost and
// returns an error wrapping store.ErrLeaseLost.
func (h *Holding) Renew(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lostErr != nil {
		return h.lostErr
	}
	if h.lock == nil && !h.d.cfg.LeaseOnly {
		// Taken over from a frozen holder: take its lock file too once
		// it lets go, so the lock file names the holder again.
		if l, err := TryLock(h.d.cfg.Dir, h.d.cfg.Name); err == nil {
			h.lock = l
		}
	}
	now := h.d.cfg.Clock.Now()
	l, err := h.d.cfg.Leases.TakeLease(ctx, h.params(now, h.lease.Epoch))
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		h.loseLocked(err)
		return h.lostErr
	case err != nil:
		return fmt.Errorf("renew duty %s: %w", h.d.cfg.Name, err)
	}
	h.lease, h.renewedAt = l, now
	h.renewed.Store(now.UnixNano())
	return nil
}

// Lose records that a write fenced by this holding found the lease lost
// (err wraps store.ErrLeaseLost); it closes Lost.
func (h *Holding) Lose(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.loseLocked(err)
}

func (h *Holding) loseLocked(err error) {
	if h.lostErr != nil {
		return
	}
	h.lostErr = fmt.Errorf("duty %s: %w", h.d.cfg.Name, err)
	close(h.lost)
	if h.lock != nil {
		_ = h.lock.Unlock() // the duty is someone else's now
		h.lock = nil
	}
}

func (h *Holding) renewLoop(t clock.Timer) {
	defer close(h.done)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-h.lost:
			return
		case <-t.C():
		}
		err := h.Renew(context.Background())
		if h.d.onRenew != nil {
			h.d.onRenew(err)
		}
		t.Reset(h.d.cfg.Renew)
	}
}

// Release ends the holding: the renewals stop, the lease is released (so
// the next peer need not wait for it to expire) and the lock file
// unlocked. It is idempotent, and a no-op on a nil Holding.
func (h *Holding) Release() error {
	if h == nil {
		return nil
	}
	h.release.Do(func() {
		close(h.stop)
		<-h.done
		h.mu.Lock()
		defer h.mu.Unlock()
		var errs []error
		if h.lostErr == nil {
			f := h.lease.Fence()
			if err := h.d.cfg.Leases.ReleaseLease(context.Background(), f); err != nil {
				errs = append(errs, fmt.Errorf("release duty %s: %w", h.d.cfg.Name, err))
				h.d.mu.Lock()
				h.d.unreleased = &f
				h.d.mu.Unlock()
			}
		}
		if h.lock != nil {
			errs = append(errs, h.lock.Unlock())
			h.lock = nil
		}
		h.releaseErr = errors.Join(errs...)
	})
	return h.releaseErr
}

// releaseLeftover releases the lease of an earlier holding whose release
// failed. The release is fenced: it changes nothing when another process
// took the lease meanwhile.
func (d *Duty) releaseLeftover(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.unreleased == nil {
		return
	}
	if d.cfg.Leases.ReleaseLease(ctx, *d.unreleased) == nil {
		d.unreleased = nil
	}
}
