package cli

import (
	"context"
	"errors"
	"os"

	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

// A worker whose store cannot write (a full or failing state disk; the
// store resumes by itself) lets go of the worker duty, as the host lets
// go of the scheduler, so that a peer whose writes succeed can take it;
// the lease's release is a write too, refused meanwhile, so in leases
// mode a peer takes it once it expires. When the store writes again the
// worker takes the duty back, or exits when another worker took it.

// healthFollow follows a store's health; its channel is nil (never
// ready) for a store that cannot pause.
type healthFollow struct {
	w  store.HealthWatcher
	ch <-chan struct{}
}

func followHealth(st store.Store) *healthFollow {
	w, ok := st.(store.HealthWatcher)
	if !ok {
		return &healthFollow{}
	}
	return &healthFollow{w: w, ch: w.HealthChanged()}
}

// changed re-arms the channel after it fired and reports whether the
// store is paused now.
func (f *healthFollow) changed() bool {
	f.ch = f.w.HealthChanged()
	return f.paused()
}

// paused reports whether the store is paused now (not writing, and not
// stopped for good: a vanished database ends the worker by its context).
func (f *healthFollow) paused() bool {
	if f.w == nil {
		return false
	}
	h := f.w.Health()
	return h.Err != nil && !h.Fatal
}

// followDuty applies the store's health to the worker's holding: it
// returns the holding to go on with (nil while released), and done when
// the worker should exit (another worker took the duty meanwhile, or ctx
// ended). A take that fails otherwise (the disk is still full: the lock
// file's holder record cannot be written) is tried again at the next call.
func (e *env) followDuty(ctx context.Context, paused bool, duty *locks.Duty, held *locks.Holding) (_ *locks.Holding, done bool) {
	switch {
	case paused && held != nil:
		_ = held.Release() // its lease's release is refused now: the lease expires
		e.log.Warn("the state store cannot write: worker duty released until it writes again", "pid", os.Getpid())
		return nil, false
	case !paused && held == nil:
		h, err := duty.TakeOrWatch(ctx)
		switch {
		case errors.Is(err, locks.ErrHeld):
			e.log.Warn("another worker took the worker duty while this one could not write; exiting", "pid", os.Getpid(), "err", err)
			return nil, true
		case ctx.Err() != nil:
			return nil, true
		case err != nil:
			e.log.Warn("take the worker duty again; retrying", "pid", os.Getpid(), "err", err)
			return nil, false
		}
		e.log.Info("the state store writes again: worker duty taken again", "pid", os.Getpid())
		return h, false
	}
	return held, false
}
