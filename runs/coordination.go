package runs

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/cairnhq/cairn/store"
)

// How peers agree on who owns a run and who runs a step (Options.
// Coordination). On one machine the kernel decides: lock files in the
// workspace's locks folder, free the instant their holder dies. Lock files
// do not cross machines, so peers sharing a store from several machines
// use leases in the store instead: an owner renews its run's lease
// (run:<id>) by heartbeat, a step supervisor renews its step's
// (step:<id>), and a lease left unrenewed past its length is free for any
// peer. Writes stay fenced by the run's claim, as with lock files.
const (
	CoordinationLocks  = "locks"  // lock files (the default): one machine
	CoordinationLeases = "leases" // store leases: several machines
)

// Default lease times. A dead machine's run is adopted about
// DefaultRunLease after its last renewal; in between, the holder may miss
// four renewals in a row (a GC pause, a network blip, a database busy with
// a long transaction, a laptop lid) without losing what it owns. Two
// seconds of renewal is one small write per owned run or step every two
// seconds, which a shared database takes without noticing. A lease is
// decided on each peer's own wall clock: keep clock skew between machines
// well under the lease length (NTP does).
const (
	DefaultRunLease = 10 * time.Second
	DefaultRenew    = 2 * time.Second
)

// LeaseTimes are the lease length and renewal period of leases mode.
type LeaseTimes struct {
	Length time.Duration // default DefaultRunLease
	Renew  time.Duration // default DefaultRenew, at most a third of Length
}

func (l LeaseTimes) withDefaults() LeaseTimes {
	if l.Length <= 0 {
		l.Length = DefaultRunLease
	}
	if l.Renew <= 0 {
		l.Renew = min(DefaultRenew, l.Length/5)
	}
	return l
}

// Check refuses times under which a holder cannot keep its lease.
func (l LeaseTimes) Check() error {
	l = l.withDefaults()
	if l.Renew*3 > l.Length {
		return fmt.Errorf("lease of %s renewed every %s: renew at least three times per lease length", l.Length, l.Renew)
	}
	return nil
}

// StoreRef says which store a step supervisor opens in leases mode, to
// renew its step's lease: Kind names an opener registered with
// RegisterStoreOpener ("sqlite": Source is the database file; a
// PostgreSQL store: its URL). It travels on the supervisor's standard
// input, never in argv or the environment.
type StoreRef struct {
	Kind   string `json:"kind"`
	Source string `json:"source"`
}

// StepStore is what a step supervisor uses of the store: its step's
// lease, and the run's cancel request.
type StepStore interface {
	store.LeaseStore
	RunClaims(ctx context.Context, ids []string) ([]store.RunClaim, error)
	Close() error
}

// StoreOpener opens the store a StoreRef of its kind names.
type StoreOpener func(ctx context.Context, source string) (StepStore, error)

var openers sync.Map // kind -> StoreOpener

// supervisorStoreMode is the supervisor environment value of a supervisor
// that opens a store: "store:<kind>".
func supervisorStoreMode(kind string) string { return "store:" + kind }

// RegisterStoreOpener makes store kind openable by step supervisors;
// the composition root that links the backend calls it from an init
// function (runs imports no backend).
//
// It is also where a step supervisor of leases mode begins: its hidden
// mode cannot be entered in this package's init, as the lock-file
// supervisor's is, because its store's backend and opener are initialised
// only after this package. So a binary started as a supervisor for kind
// becomes one here, once the package registering kind has been
// initialised, and never returns.
func RegisterStoreOpener(kind string, open StoreOpener) {
	openers.Store(kind, open)
	if os.Getenv(supervisorEnv) == supervisorStoreMode(kind) {
		os.Exit(superviseMain(os.Stdin, os.NewFile(3, "status")))
	}
}

// storeOpener returns kind's opener; nil when none is registered.
func storeOpener(kind string) StoreOpener {
	v, ok := openers.Load(kind)
	if !ok {
		return nil
	}
	return v.(StoreOpener)
}

// leases reports whether the engine coordinates with store leases.
func (o *Options) leases() bool { return o.Coordination == CoordinationLeases }

// checkCoordination validates the coordination options of New.
func (o *Options) checkCoordination() error {
	switch o.Coordination {
	case "", CoordinationLocks:
		return nil
	case CoordinationLeases:
	default:
		return fmt.Errorf("new run engine: coordination %q: use %q or %q", o.Coordination, CoordinationLocks, CoordinationLeases)
	}
	if err := o.Leases.Check(); err != nil {
		return fmt.Errorf("new run engine: %w", err)
	}
	o.Leases = o.Leases.withDefaults()
	if o.InMemory {
		return nil // no step supervisors
	}
	if o.StoreRef.Kind == "" || storeOpener(o.StoreRef.Kind) == nil {
		return fmt.Errorf("new run engine: leases coordination needs a StoreRef whose kind (%q) has an opener registered with RegisterStoreOpener, for step supervisors", o.StoreRef.Kind)
	}
	return nil
}

// withLeases extends isHeld (a lock-file test) with the run's lease when
// st keeps leases: a run owned in leases mode holds no lock file.
func withLeases(st any, isHeld func(string) (bool, error)) func(string) (bool, error) {
	ls, ok := st.(store.LeaseStore)
	if !ok {
		return isHeld
	}
	leased := newLeaseLocker(ls, nil, LeaseTimes{})
	return func(id string) (bool, error) {
		if held, err := isHeld(id); err != nil || held {
			return held, err
		}
		return leased.isHeld(id)
	}
}

// forgetLeases deletes the released leases of run id once it settled
// (leases mode): they would never be taken again.
func (e *Engine) forgetLeases(id string) {
	lf, ok := e.st.(store.LeaseForgetter)
	if !ok || !e.opts.leases() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := e.st.GetRun(ctx, id); err != nil || !r.Status.Settled() {
		return
	}
	if err := lf.ForgetLeases(ctx, []string{leaseName(id), leaseName(stepKey(id))}); err != nil {
		e.log.Warn("forget leases", "run", id, "err", err)
	}
}

// leasedWorker returns the pid holding the worker duty's lease (leases
// mode: no lock file), and whether it is current.
func leasedWorker(st any) (int, bool) {
	ls, ok := st.(store.LeaseStore)
	if !ok {
		return 0, false
	}
	l, err := ls.GetLease(context.Background(), "worker")
	// A flocked lease's holder held the lock file, which is free: it
	// ended, whatever its lease says until it expires.
	if err != nil || l.Flocked || !l.Held(time.Now()) {
		return 0, false
	}
	return l.PID, true
}
