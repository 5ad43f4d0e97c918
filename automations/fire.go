package automations

// The fire path every visit shares: build the run, hand the fire to the
// store, watch the run it queued, record errors.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/access"

	"github.com/cairnhq/cairn/store"
)

// checkDisk refuses new fires while the state disk is nearly full
// (Config.DiskGuard). The refusal is a failed fire like any other:
// recorded on the automation, a cron slot counted as missed, a monitor's
// launch left pending.
func (s *Scheduler) checkDisk() error {
	if err := s.cfg.DiskGuard.Check(); err != nil {
		return fmt.Errorf("fire: %w", err)
	}
	return nil
}

// prepare builds a's run for the slot nominal.
func (s *Scheduler) prepare(ctx context.Context, a *store.Automation, nominal time.Time) (*store.Run, error) {
	if err := s.checkDisk(); err != nil {
		return nil, err
	}
	if err := s.checkPolicy(a); err != nil {
		return nil, err
	}
	run, err := s.cfg.Targets.Prepare(ctx, a.Target, a.Input)
	if err != nil {
		return nil, err
	}
	run.Trigger = fireTrigger(a, nominal)
	return run, nil
}

// prepareAll builds the runs of many automations for the slot nominal,
// with one look at the workflows when the targets can batch (errs[i] is
// as[i]'s error, runs[i] then nil).
func (s *Scheduler) prepareAll(ctx context.Context, as []*store.Automation, nominal time.Time) (runs []*store.Run, errs []error) {
	if len(as) == 0 {
		return nil, nil
	}
	if err := s.checkDisk(); err != nil {
		runs, errs = make([]*store.Run, len(as)), make([]error, len(as))
		for i := range errs {
			errs[i] = err
		}
		return runs, errs
	}
	b, ok := s.cfg.Targets.(BatchTargets)
	if !ok {
		runs, errs = make([]*store.Run, len(as)), make([]error, len(as))
		for i, a := range as {
			runs[i], errs[i] = s.prepare(ctx, a, nominal)
		}
		return runs, errs
	}
	// Those the policy refuses fail here; the others are prepared in one
	// batch (at[j] is the index in as of reqs[j]).
	runs, errs = make([]*store.Run, len(as)), make([]error, len(as))
	reqs, at := make([]PrepareRequest, 0, len(as)), make([]int, 0, len(as))
	for i, a := range as {
		if errs[i] = s.checkPolicy(a); errs[i] == nil {
			reqs, at = append(reqs, PrepareRequest{Target: a.Target, Input: a.Input}), append(at, i)
		}
	}
	if len(reqs) == 0 {
		return runs, errs
	}
	got, gerrs := b.PrepareAll(ctx, reqs)
	for j, i := range at {
		runs[i], errs[i] = got[j], gerrs[j]
		if runs[i] != nil {
			runs[i].Trigger = fireTrigger(as[i], nominal)
		}
	}
	return runs, errs
}

// checkPolicy refuses the fire of an agent's automation whose target
// agents.launch does not allow (any longer): its owner launches it.
func (s *Scheduler) checkPolicy(a *store.Automation) error {
	if err := s.cfg.Policy.CanLaunch(access.Of(a.Owner), a.Target); err != nil {
		return fmt.Errorf("fire automation %s of %s: %w", a.Key, a.Owner, err)
	}
	return nil
}

// fireTrigger is the trigger of a's run for the slot nominal: its
// principal is the automation's owner.
func fireTrigger(a *store.Automation, nominal time.Time) store.Trigger {
	return store.Trigger{Kind: "automation", AutomationID: a.ID, Nominal: nominal.UTC().Truncate(time.Millisecond), Principal: ownerPrincipal(a.Owner)}
}

// ownerPrincipal is the principal an automation's runs are launched by.
func ownerPrincipal(owner string) string {
	if owner == "" {
		return ""
	}
	return string(access.Of(owner))
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
	res, err := s.storeFire(ctx, p)
	if err != nil {
		return err
	}
	if !res.AlreadyFired && res.Run != nil {
		s.watchFor(a.ID, res.Run.ID)
		s.log.Info("fired", "automation", a.Key, "slot", p.Nominal, "run", res.Run.ID)
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
	if errors.Is(err, store.ErrPaused) || errors.Is(err, store.ErrLeaseLost) || ctx.Err() != nil {
		return
	}
	s.log.Warn("automation", "key", a.Key, "err", err)
	if a.State.LastError == err.Error() {
		return
	}
	if _, rerr := s.storeRecord(ctx, store.RecordParams{AutomationID: a.ID, Error: err.Error()}); rerr != nil {
		s.log.Warn("record automation error", "automation", a.Key, "err", rerr)
	}
}

func (s *Scheduler) record(ctx context.Context, a *store.Automation, p store.RecordParams) {
	p.AutomationID = a.ID
	if _, err := s.storeRecord(ctx, p); err != nil && ctx.Err() == nil && !errors.Is(err, store.ErrLeaseLost) {
		s.log.Warn("record automation", "automation", a.Key, "err", err)
	}
}
