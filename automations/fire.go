package automations

// The fire path every visit shares: build the run, hand the fire to the
// store, watch the run it queued, record errors.

import (
	"context"
	"errors"
	"time"

	"github.com/cairnhq/cairn/store"
)

// prepare builds a's run for the slot nominal.
func (s *Scheduler) prepare(ctx context.Context, a *store.Automation, nominal time.Time) (*store.Run, error) {
	run, err := s.cfg.Targets.Prepare(ctx, a.Target, a.Input)
	if err != nil {
		return nil, err
	}
	run.Trigger = store.Trigger{Kind: "automation", AutomationID: a.ID, Nominal: nominal.UTC().Truncate(time.Millisecond)}
	return run, nil
}

// fire queues a's run for the slot p.Nominal.
func (s *Scheduler) fire(ctx context.Context, a *store.Automation, p store.FireParams) error {
	run, err := s.prepare(ctx, a, p.Nominal)
	if err != nil {
		return err
	}
	// The actual time is when the fire is handed to the store, so a lag
	// includes waiting behind other fires of the same pass.
	p.AutomationID, p.Run, p.Actual = a.ID, run, s.cfg.Clock.Now()
	res, err := s.cfg.Store.Fire(ctx, p)
	if err != nil {
		return err
	}
	if !res.AlreadyFired && res.Run != nil {
		s.watchFor(a.ID, res.Run.ID)
	}
	return nil
}

// watchFor notes that automationID's run runID is in flight, so that the
// leader wakes when it settles.
func (s *Scheduler) watchFor(automationID, runID string) {
	s.mu.Lock()
	s.inflight[automationID] = runID
	s.mu.Unlock()
}

func (s *Scheduler) recordError(ctx context.Context, a *store.Automation, err error) {
	if errors.Is(err, store.ErrPaused) || ctx.Err() != nil {
		return
	}
	s.log.Warn("automation", "key", a.Key, "err", err)
	if a.State.LastError == err.Error() {
		return
	}
	if _, rerr := s.cfg.Store.RecordAutomation(ctx, store.RecordParams{AutomationID: a.ID, Error: err.Error()}); rerr != nil {
		s.log.Warn("record automation error", "automation", a.Key, "err", rerr)
	}
}

func (s *Scheduler) record(ctx context.Context, a *store.Automation, p store.RecordParams) {
	p.AutomationID = a.ID
	if _, err := s.cfg.Store.RecordAutomation(ctx, p); err != nil && ctx.Err() == nil {
		s.log.Warn("record automation", "automation", a.Key, "err", err)
	}
}
