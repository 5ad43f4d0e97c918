package automations

// Pausing an automation whose fires keep failing: every failed run and
// every fire that errored is recorded with the pause rule, and the store
// pauses the automation, with its notification, in the record's write
// once the failures in a row reach Config.PauseAfter (policy.PlanRecord).

import (
	"context"
	"errors"

	"github.com/cairnhq/cairn/automations/policy"
	"github.com/cairnhq/cairn/store"
)

// pauseRule is the pause a failure of a recorded now may cause, with why
// (last: the failure); nil when nothing pauses automations.
func (s *Scheduler) pauseRule(a *store.Automation, last string) *store.PauseParams {
	if s.cfg.PauseAfter <= 0 {
		return nil
	}
	at := s.cfg.Clock.Now()
	note := policy.PauseNote(a.Key, int64(s.cfg.PauseAfter), last)
	p := &store.PauseParams{After: s.cfg.PauseAfter, Note: note, At: at}
	if s.cfg.PauseNotify != nil {
		p.Notify = s.cfg.PauseNotify(a, note, at)
	}
	return p
}

// fireFailed records that a fire of a failed with err before it queued a
// run, together with p's other updates (a cron's lost slot, a monitor's
// pending launch): it counts towards the failures that pause a. A fire
// refused because a is paused, or because the lease was lost, is no
// failure of a's.
func (s *Scheduler) fireFailed(ctx context.Context, a *store.Automation, err error, p store.RecordParams) {
	if errors.Is(err, store.ErrPaused) || errors.Is(err, store.ErrLeaseLost) || ctx.Err() != nil {
		if p != (store.RecordParams{}) {
			s.record(ctx, a, p)
		}
		return
	}
	s.log.Warn("automation", "key", a.Key, "err", err)
	p.Error, p.FireFailed = err.Error(), true
	p.Pause = s.pauseRule(a, p.Error)
	s.recordPausing(ctx, a, p)
}

// recordPausing stores p, a record that may pause a, and returns a as
// stored (a itself when the record failed).
func (s *Scheduler) recordPausing(ctx context.Context, a *store.Automation, p store.RecordParams) *store.Automation {
	p.AutomationID = a.ID
	b, err := s.storeRecord(ctx, p)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, store.ErrLeaseLost) {
			s.log.Warn("record automation", "automation", a.Key, "err", err)
		}
		return a
	}
	if p.Pause != nil && a.Enabled && !b.Enabled && b.Note == p.Pause.Note {
		s.log.Warn("automation paused", "automation", b.Key, "failures", b.State.Failures, "note", b.Note)
		if s.cfg.OnPause != nil {
			s.cfg.OnPause(b)
		}
	}
	return b
}

// runFailure says why run r of runID failed, for a pause's note.
func runFailure(runID string, r *store.Run) string {
	if r.Error == "" {
		return "run " + runID + " failed"
	}
	return "run " + runID + " failed: " + r.Error
}
