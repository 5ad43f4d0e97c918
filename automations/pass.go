package automations

// A pass: one visit per enabled automation, run in parallel, each
// recording a settled run, releasing a buffered fire and handing the
// automation to its trigger kind's visit (cron.go, interval.go, poll.go).

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/cairnhq/cairn/automations/schedule"
	"github.com/cairnhq/cairn/store"
)

// step does one pass over every enabled automation: it records settled
// runs, fires what is due, starts due monitor polls, and returns the
// earliest time something is due next (zero: nothing scheduled).
func (s *Scheduler) step(ctx context.Context) time.Time {
	now := s.cfg.Clock.Now()
	list, err := s.cfg.Store.ListAutomations(ctx, store.AutomationFilter{})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("list automations", "err", err)
		}
		return now.Add(s.cfg.Check)
	}
	live := make(map[string]bool, len(list))
	for _, a := range list {
		live[a.ID] = a.Enabled
	}
	s.mu.Lock()
	clear(s.inflight)
	s.soon = s.soon[:0]
	for id := range s.lastPoll {
		if !live[id] && !s.polling[id] {
			delete(s.lastPoll, id) // deleted or paused: poll afresh later
		}
	}
	for id := range s.retryAt {
		if !live[id] {
			delete(s.retryAt, id)
		}
	}
	maps.DeleteFunc(s.stepped, func(id string, _ stepBack) bool { return !live[id] })
	inUse := make(map[string]bool, len(s.crons))
	for _, a := range list {
		if a.Trigger.Kind == store.TriggerCron {
			inUse[cronKey(a.Trigger)] = true
		}
	}
	maps.DeleteFunc(s.crons, func(k string, _ *schedule.Cron) bool { return !inUse[k] })
	s.mu.Unlock()
	var (
		mu   sync.Mutex
		next time.Time
		wg   sync.WaitGroup
		sem  = make(chan struct{}, s.cfg.Parallel)
	)
	for _, a := range list {
		if !a.Enabled {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			due := s.visit(ctx, a, now)
			if due.IsZero() {
				return
			}
			mu.Lock()
			if next.IsZero() || due.Before(next) {
				next = due
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return next
}

// visit handles one automation at now and returns when it is due next.
func (s *Scheduler) visit(ctx context.Context, a *store.Automation, now time.Time) time.Time {
	if a.State.InFlight() {
		if a = s.watchRun(ctx, a); !a.Enabled {
			return time.Time{} // paused by its failures
		}
	}
	if !a.State.Buffered.IsZero() && !a.State.InFlight() {
		a = s.release(ctx, a, now)
	}
	switch a.Trigger.Kind {
	case store.TriggerCron:
		return s.visitCron(ctx, a, now)
	case store.TriggerInterval:
		if a.Overlap == store.OverlapAllow {
			return s.visitRate(ctx, a, now)
		}
		return s.visitDelay(ctx, a, now)
	case store.TriggerFiles, store.TriggerHTTP:
		return s.visitMonitor(ctx, a, now)
	}
	return time.Time{}
}

// watchRun records the settle of a's latest run if it has settled, and
// otherwise watches it. It returns a, updated.
func (s *Scheduler) watchRun(ctx context.Context, a *store.Automation) *store.Automation {
	runID := a.State.LastRunID
	r, err := s.cfg.Runs.GetRun(ctx, runID)
	var fin *store.RunFinish
	switch {
	case errors.Is(err, store.ErrNotFound):
		fin = &store.RunFinish{RunID: runID, At: s.cfg.Clock.Now(), Status: "missing"}
	case err != nil:
		s.log.Warn("read run", "run", runID, "err", err)
	case r.Status.Settled():
		at := r.FinishedAt
		if at.IsZero() {
			at = r.UpdatedAt
		}
		fin = &store.RunFinish{RunID: runID, At: at, Status: r.Status}
	}
	if fin == nil {
		s.watchFor(a.ID, runID)
		return a
	}
	p := store.RecordParams{Finished: fin}
	if fin.Status == store.RunFailed {
		p.Pause = s.pauseRule(a, runFailure(runID, r))
	}
	return s.recordPausing(ctx, a, p)
}

// release hands over the fire buffer_one held, now that the previous run
// settled.
func (s *Scheduler) release(ctx context.Context, a *store.Automation, now time.Time) *store.Automation {
	nominal := a.State.Buffered
	run, err := s.prepare(ctx, a, nominal)
	if err != nil {
		s.fireFailed(ctx, a, err, store.RecordParams{})
		return a
	}
	if _, err := s.storeFire(ctx, store.FireParams{AutomationID: a.ID, Nominal: nominal, Actual: now, Run: run, Release: true}); err != nil {
		s.log.Warn("release buffered fire", "automation", a.Key, "err", err)
		return a
	}
	b, err := s.cfg.Store.GetAutomation(ctx, a.ID)
	if err != nil {
		return a
	}
	if b.State.InFlight() {
		s.watchFor(b.ID, b.State.LastRunID)
	}
	return b
}
