package host

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// CoordinationSettings is the coordination: section: how the peers of a
// workspace agree on who owns a run, runs a step and does the scheduler
// and worker duties (runs.Options.Coordination).
type CoordinationSettings struct {
	// Mode is "locks" (lock files: one machine) or "leases" (store
	// leases: several machines); empty: leases when the store says it is
	// shared (store.Sharer), else locks.
	Mode string `yaml:"mode"`
	// Lease is how long a lease lasts unrenewed (runs.DefaultRunLease);
	// Renew how often its holder renews it (runs.DefaultRenew).
	Lease *Duration `yaml:"lease"`
	Renew *Duration `yaml:"renew"`
}

func (c CoordinationSettings) times() runs.LeaseTimes {
	var t runs.LeaseTimes
	if c.Lease != nil {
		t.Length = time.Duration(*c.Lease)
	}
	if c.Renew != nil {
		t.Renew = time.Duration(*c.Renew)
	}
	return t
}

func (c CoordinationSettings) check() error {
	switch c.Mode {
	case "", runs.CoordinationLocks, runs.CoordinationLeases:
	default:
		return fmt.Errorf("coordination.mode is %q; use %s or %s", c.Mode, runs.CoordinationLocks, runs.CoordinationLeases)
	}
	if c.Lease != nil && time.Duration(*c.Lease) < 300*time.Millisecond {
		return fmt.Errorf("coordination.lease is %s; use at least 300ms", time.Duration(*c.Lease))
	}
	if err := c.times().Check(); err != nil {
		return fmt.Errorf("coordination: %w", err)
	}
	return nil
}

// coordination picks the mode: Config's, else the config file's, else
// leases for a store shared by several machines.
func (h *Host) coordination(cfg Config) string {
	switch {
	case cfg.Coordination != "":
		return cfg.Coordination
	case h.Settings.Coordination.Mode != "":
		return h.Settings.Coordination.Mode
	case store.IsShared(h.Store):
		return runs.CoordinationLeases
	}
	return runs.CoordinationLocks
}

// Leases reports whether the host coordinates with store leases.
func (h *Host) Leases() bool { return h.mode == runs.CoordinationLeases }

// dutyLease is the scheduler's and worker's lease length: coordination.
// lease in leases mode, else (zero) the duties' default.
func (h *Host) dutyLease() time.Duration {
	if !h.Leases() {
		return 0
	}
	return h.Settings.Coordination.times().Length
}

// coordinate sets the run engine's coordination options.
func (h *Host) coordinate(cfg Config, o *runs.Options) {
	h.mode = h.coordination(cfg)
	o.Coordination, o.Leases = h.mode, h.Settings.Coordination.times()
	o.StoreRef = h.stepRef // set by whoever opened another backend, with its opener registered below
	if _, ok := h.Store.(*sqlite.Store); ok {
		o.StoreRef = runs.StoreRef{Kind: "sqlite", Source: h.Workspace.DBPath()}
	}
}

// A step supervisor of leases mode opens the store to renew its step's
// lease; registering the opener here is also where such a supervisor
// begins (see runs.RegisterStoreOpener). A shared backend (PostgreSQL)
// registers its own opener the same way and sets h.stepRef when it opens
// the store: its URL and workspace id as the opener reads them.
func init() {
	runs.RegisterStoreOpener("sqlite", func(ctx context.Context, path string) (runs.StepStore, error) {
		return sqlite.Open(ctx, path, sqlite.Options{})
	})
}
