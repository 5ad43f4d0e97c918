package host

import (
	"context"
	"sync"

	"github.com/cairnhq/cairn/store"
)

// The host follows its store's health (store.HealthWatcher). While the
// store cannot write (a full or failing disk; it resumes by itself) the
// host releases the scheduler, so that a peer whose writes succeed fires
// the automations, and starts it again when the store writes again; new
// work is refused meanwhile by the store's own error. When the store has
// stopped for good (its database vanished or was replaced) the host stops
// its loops and Failed reports why, so serve and worker end.

// supervisor runs the health loop of one host.
type supervisor struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu       sync.Mutex
	failed   error
	failedCh chan struct{}
	paused   bool // the scheduler was stopped here, to start again
}

func newSupervisor() *supervisor {
	return &supervisor{stop: make(chan struct{}), done: make(chan struct{}), failedCh: make(chan struct{})}
}

// superviseHealth starts following w; Stop ends it.
func (h *Host) superviseHealth(w store.HealthWatcher) {
	go func() {
		defer close(h.sup.done)
		for {
			changed := w.HealthChanged()
			h.applyHealth(w.Health())
			select {
			case <-changed:
			case <-h.sup.stop:
				return
			}
		}
	}()
}

// halt ends the health loop and waits for it. It is idempotent.
func (s *supervisor) halt() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}

func (h *Host) applyHealth(st store.Health) {
	sup := h.sup
	switch {
	case st.Fatal:
		sup.mu.Lock()
		first := sup.failed == nil
		if first {
			sup.failed = st.Err
			close(sup.failedCh)
		}
		sup.mu.Unlock()
		if first {
			h.log.Error("the state store stopped for good; this host stops its loops", "err", st.Err)
			h.stopLoops()
		}
	case st.Err != nil:
		sup.mu.Lock()
		defer sup.mu.Unlock()
		if !sup.paused && h.Scheduler.Running() {
			h.Scheduler.Stop()
			sup.paused = true
		}
		h.log.Warn("the state store cannot write: scheduler released, new work refused until it resumes", "err", st.Err, "since", st.Since)
	default:
		sup.mu.Lock()
		defer sup.mu.Unlock()
		if !sup.paused {
			return
		}
		sup.paused = false
		if err := h.Scheduler.Start(context.Background()); err != nil {
			h.log.Warn("restart the scheduler", "err", err)
			return
		}
		h.log.Info("the state store writes again: scheduler restarted")
	}
}

// Failed returns the error that stopped the store for good, or nil.
func (h *Host) Failed() error {
	if h.sup == nil {
		return nil
	}
	h.sup.mu.Lock()
	defer h.sup.mu.Unlock()
	return h.sup.failed
}

// UntilFailed returns a context that ends, with Failed as its cause, when
// the store stops for good; release frees it.
func (h *Host) UntilFailed(ctx context.Context) (_ context.Context, release context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	if h.sup == nil {
		return ctx, func() { cancel(nil) }
	}
	go func() {
		select {
		case <-h.sup.failedCh:
			cancel(h.Failed())
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}
