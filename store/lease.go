package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Leases are the liveness half of a duty (the scheduler, the worker). The
// duty's lock file says a process is alive and claims the duty; the lease
// says it is also making progress: its holder renews it every second or
// so, and once it has gone unrenewed past its expiry (a holder stopped by
// SIGSTOP or Ctrl-Z, or stuck on a hung disk) another peer takes it over
// even though the first still holds the lock file. The lease lives in the
// store rather than in the lock file's record because the store can fence
// by it: a fire names the lease it was decided under, and the store checks
// holder and epoch in the fire's own transaction, so a holder that wakes
// up after losing its lease cannot fire with it.

// Lease is who does a duty and until when.
type Lease struct {
	Name   string `json:"name"`
	Holder string `json:"holder"` // the holding's id; "" once released
	PID    int    `json:"pid"`
	// Epoch grows with every new holding, so that a fence names one.
	Epoch int64 `json:"epoch"`
	// Flocked says the holder holds the duty's lock file too.
	Flocked bool      `json:"flocked"`
	Since   time.Time `json:"since"`   // when this holding began
	Renewed time.Time `json:"renewed"` // its latest renewal
	Expires time.Time `json:"expires"` // Renewed plus the lease length
}

// Held reports whether the lease names a holder whose lease has not
// expired at now.
func (l *Lease) Held(now time.Time) bool {
	return l != nil && l.Holder != "" && now.Before(l.Expires)
}

// Fence is what a write made under the lease names.
func (l *Lease) Fence() LeaseFence {
	return LeaseFence{Name: l.Name, Holder: l.Holder, Epoch: l.Epoch}
}

// LeaseParams take or renew a lease.
type LeaseParams struct {
	Name   string
	Holder string // a fresh id per holding
	PID    int
	// Flocked says the caller holds the duty's lock file now.
	Flocked bool
	// Epoch, when set, renews the holding of that epoch: it fails with a
	// *LeaseLostError unless Holder still holds it (expired or not, as
	// long as nobody took it over). Zero takes the lease.
	Epoch int64
	Now   time.Time     // zero: the current time
	TTL   time.Duration // the lease length; required
}

// LeaseFence names one holding of a lease. A write carrying one (FireParams,
// RecordParams) is refused with a *LeaseLostError, and writes nothing,
// unless that holding is still the lease's current one.
type LeaseFence struct {
	Name   string
	Holder string
	Epoch  int64
}

var (
	// ErrLeaseHeld is wrapped by *LeaseHeldError.
	ErrLeaseHeld = errors.New("lease is held")
	// ErrLeaseLost is wrapped by *LeaseLostError.
	ErrLeaseLost = errors.New("lease was lost")
)

// LeaseHeldError refuses a take: another holder's lease is current.
type LeaseHeldError struct{ Lease Lease }

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("lease %s is held by pid %d until %s", e.Lease.Name, e.Lease.PID, e.Lease.Expires.UTC().Format(time.RFC3339Nano))
}

func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// LeaseLostError refuses a renewal or a fenced write: the holding it names
// is no longer the lease's current one. Current is the lease as stored
// (zero when there is none).
type LeaseLostError struct {
	Fence   LeaseFence
	Current Lease
}

func (e *LeaseLostError) Error() string {
	if e.Current.Holder == "" {
		return fmt.Sprintf("lease %s (epoch %d) was lost: released", e.Fence.Name, e.Fence.Epoch)
	}
	return fmt.Sprintf("lease %s (epoch %d) was lost to pid %d (epoch %d)", e.Fence.Name, e.Fence.Epoch, e.Current.PID, e.Current.Epoch)
}

func (e *LeaseLostError) Unwrap() error { return ErrLeaseLost }

// LeaseStore keeps the duties' leases. Methods are safe for concurrent use
// from many goroutines and processes.
type LeaseStore interface {
	// TakeLease takes or renews a lease (see PlanLease) and returns it as
	// stored.
	TakeLease(ctx context.Context, p LeaseParams) (Lease, error)
	// ReleaseLease ends the holding f names, keeping the epoch; it does
	// nothing when f is not the current holding.
	ReleaseLease(ctx context.Context, f LeaseFence) error
	// GetLease returns a lease; one never taken is an error wrapping
	// ErrNotFound.
	GetLease(ctx context.Context, name string) (Lease, error)
}

// PlanLease decides a take or renewal of the lease cur (nil: never taken)
// and returns the lease to store. A take succeeds when the lease is free
// (never taken, released, or expired at p.Now), when p.Holder holds it
// already, or when the caller holds the duty's lock file and the current
// holder held it too: only one process holds a lock file, so that holder
// has let it go (it ended) and its lease is void. Otherwise the take is a
// *LeaseHeldError. A renewal (p.Epoch set) succeeds only for the current
// holding, else it is a *LeaseLostError.
func PlanLease(cur *Lease, p LeaseParams) (Lease, error) {
	if p.Name == "" || p.Holder == "" || p.TTL <= 0 {
		return Lease{}, fmt.Errorf("take lease %q: name, holder and a positive length are required", p.Name)
	}
	now := Millis(At(p.Now))
	next := Lease{Name: p.Name, Holder: p.Holder, PID: p.PID, Flocked: p.Flocked, Renewed: now, Expires: Millis(now.Add(p.TTL))}
	mine := cur != nil && cur.Holder == p.Holder
	switch {
	case p.Epoch != 0:
		if !mine || cur.Epoch != p.Epoch {
			return Lease{}, lostError(cur, LeaseFence{Name: p.Name, Holder: p.Holder, Epoch: p.Epoch})
		}
	case mine:
	case cur != nil && cur.Held(now) && !(p.Flocked && cur.Flocked):
		return Lease{}, &LeaseHeldError{Lease: *cur}
	}
	if mine {
		next.Epoch, next.Since = cur.Epoch, cur.Since
		return next, nil
	}
	next.Epoch, next.Since = 1, now
	if cur != nil {
		next.Epoch = cur.Epoch + 1
	}
	return next, nil
}

// PlanRelease returns the lease cur after the holding f ends, and whether
// that changes it.
func PlanRelease(cur *Lease, f LeaseFence) (Lease, bool) {
	if cur == nil || cur.Holder != f.Holder || cur.Epoch != f.Epoch || f.Holder == "" {
		return Lease{}, false
	}
	next := *cur
	next.Holder, next.PID, next.Flocked = "", 0, false
	next.Expires = next.Renewed
	return next, true
}

// CheckFence refuses a write fenced by f (nil: not fenced) unless f is the
// current holding of the lease cur (nil: never taken). Expiry is not
// checked: a holding nobody took over is still the only one.
func CheckFence(cur *Lease, f *LeaseFence) error {
	if f == nil {
		return nil
	}
	if cur == nil || cur.Holder == "" || cur.Holder != f.Holder || cur.Epoch != f.Epoch {
		return lostError(cur, *f)
	}
	return nil
}

func lostError(cur *Lease, f LeaseFence) error {
	e := &LeaseLostError{Fence: f}
	if cur != nil {
		e.Current = *cur
	}
	return e
}

// DistinctFences returns the fences among fs, each once, without nils:
// the fences of one write are nearly always one and the same, and each
// needs reading once.
func DistinctFences(fs ...*LeaseFence) []LeaseFence {
	var out []LeaseFence
	for _, f := range fs {
		if f != nil && !slices.Contains(out, *f) {
			out = append(out, *f)
		}
	}
	return out
}
