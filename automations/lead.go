package automations

// The leader's loop: one timer to the earliest due time, reset after each
// pass; Notify, a finished poll, or a change seen on the Check timer wakes it
// early.

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

// lead runs the scheduling loop while this process holds the duty h,
// until ctx ends or the lease is lost. Before each tick it makes sure its
// lease is current: a leader that was stopped for longer than the lease
// renews it first, and stops leading when a peer took it over meanwhile.
func (s *Scheduler) lead(ctx context.Context, h *locks.Holding) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-h.Lost():
			cancel(h.Err())
		case <-ctx.Done():
		}
	}()
	s.holding.Store(h)
	defer s.holding.Store(nil)
	s.leading.Store(true)
	defer s.leading.Store(false)
	defer s.polls.Wait()
	s.log.Info("scheduler leading")
	s.syncIfChanged(ctx)
	if v, err := s.cfg.Store.AutomationsVersion(ctx); err == nil {
		s.setVersion(v)
	}
	s.signal(eventLead)
	defer func() { s.armed = nil }()
	wake := s.cfg.Clock.NewTimer(0)
	check := s.cfg.Clock.NewTimer(s.cfg.Check)
	defer wake.Stop()
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake.C():
		case <-s.notify:
		case <-s.pollDone:
		case <-check.C():
			check.Reset(s.cfg.Check)
			if !s.armedDue() && !s.changed(ctx) {
				continue
			}
		}
		if !h.Current() {
			// Lost: ctx ends. Otherwise the writes of the tick are
			// fenced anyway, and the renewals go on.
			if err := h.Renew(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("renew the scheduler lease", "err", err)
			}
			if h.Err() != nil || ctx.Err() != nil {
				return
			}
		}
		at := s.tick(ctx)
		wait := s.cfg.MaxWait
		if !at.IsZero() {
			wait = min(max(at.Sub(s.cfg.Clock.Now()), 0), s.cfg.MaxWait)
		}
		wake.Stop()
		wake.Reset(wait)
		s.signal(eventTick)
	}
}

// signal tells a test's hook that event happened.
func (s *Scheduler) signal(event string) {
	if s.hook != nil {
		s.hook(event)
	}
}

// tick is one wake-up of the leader: it commits the fires prepared for
// a slot that has come, runs a pass for everything else, prepares the
// next slot when it is near, and returns when to wake up next (zero:
// nothing scheduled).
func (s *Scheduler) tick(ctx context.Context) time.Time {
	s.fireArmed(ctx)
	return s.arm(ctx, s.step(ctx))
}

func (s *Scheduler) setVersion(v int64) {
	s.mu.Lock()
	s.version = v
	s.mu.Unlock()
}

// changed reports whether anything the leader was not told about moved:
// the automations version, the workflow files, a watched run.
func (s *Scheduler) changed(ctx context.Context) bool {
	moved := s.syncIfChanged(ctx)
	if v, err := s.cfg.Store.AutomationsVersion(ctx); err != nil {
		s.log.Warn("read automations version", "err", err)
	} else {
		s.mu.Lock()
		if v != s.version {
			s.version, moved = v, true
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	watched := maps.Clone(s.inflight)
	s.mu.Unlock()
	for _, runID := range watched {
		r, err := s.cfg.Runs.GetRun(ctx, runID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && r.Status.Settled()) {
			return true
		}
	}
	return moved
}

// syncIfChanged syncs the workflow files when they changed since the last
// sync; it reports whether it synced.
func (s *Scheduler) syncIfChanged(ctx context.Context) bool {
	if s.cfg.WorkflowsDir == "" {
		return false
	}
	finger, err := Fingerprint(s.cfg.WorkflowsDir)
	if err != nil {
		s.log.Warn("look at workflow files", "err", err)
		return false
	}
	s.mu.Lock()
	same := s.synced && finger == s.finger
	s.mu.Unlock()
	if same {
		return false
	}
	rep, err := Sync(ctx, SyncParams{Store: s.cfg.Store, Dir: s.cfg.WorkflowsDir, Clock: s.cfg.Clock})
	for _, p := range rep.Problems {
		s.log.Warn("workflow trigger", "problem", p)
	}
	if err != nil {
		s.log.Warn("sync workflow triggers", "err", err)
		return false
	}
	s.mu.Lock()
	s.finger, s.synced = finger, true
	s.mu.Unlock()
	return true
}
