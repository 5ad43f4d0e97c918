package automations

// The scheduler's lease (locks.Duty): while leading, every fire and record
// the scheduler writes carries the holding's fence, so that a leader that
// was stopped (SIGSTOP, Ctrl-Z) and lost the lease to a peer cannot write
// with it once it runs again; a refusal makes it stop leading.

import (
	"context"
	"errors"

	"github.com/cairnhq/cairn/store"
)

// fence returns the fence of the lease held now (nil when not leading).
func (s *Scheduler) fence() *store.LeaseFence {
	if h := s.holding.Load(); h != nil {
		return h.Fence()
	}
	return nil
}

// checkLease stops leading when err says the lease was lost.
func (s *Scheduler) checkLease(err error) {
	if !errors.Is(err, store.ErrLeaseLost) {
		return
	}
	if h := s.holding.Load(); h != nil {
		h.Lose(err)
	}
}

// storeFire is Store.Fire fenced by the lease.
func (s *Scheduler) storeFire(ctx context.Context, p store.FireParams) (store.FireResult, error) {
	p.Lease = s.fence()
	res, err := s.cfg.Store.Fire(ctx, p)
	s.checkLease(err)
	return res, err
}

// storeFireMany is Store.FireMany fenced by the lease.
func (s *Scheduler) storeFireMany(ctx context.Context, ps []store.FireParams) ([]store.FireOutcome, error) {
	f := s.fence()
	for i := range ps {
		ps[i].Lease = f
	}
	outs, err := s.cfg.Store.FireMany(ctx, ps)
	s.checkLease(err)
	return outs, err
}

// storeRecord is Store.RecordAutomation fenced by the lease.
func (s *Scheduler) storeRecord(ctx context.Context, p store.RecordParams) (*store.Automation, error) {
	p.Lease = s.fence()
	a, err := s.cfg.Store.RecordAutomation(ctx, p)
	s.checkLease(err)
	return a, err
}
