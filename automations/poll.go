package automations

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
)

// visitMonitor starts a poll of a monitor when one is due and returns when
// the next is. Polls run in the background (an HTTP poll may take up to
// HTTPTimeout) and wake the scheduler when they are done.
func (s *Scheduler) visitMonitor(ctx context.Context, a *store.Automation, now time.Time) time.Time {
	ev := every(a.Trigger)
	s.mu.Lock()
	last, busy := s.lastPoll[a.ID], s.polling[a.ID]
	due := last.Add(ev)
	if last.IsZero() {
		due = now // first look in this process
	}
	start := !busy && !now.Before(due)
	if start {
		s.polling[a.ID] = true
		s.lastPoll[a.ID] = now
		due = now.Add(ev)
	}
	s.mu.Unlock()
	if !start {
		if busy {
			return now.Add(ev)
		}
		return due
	}
	s.polls.Add(1)
	go func() {
		defer s.polls.Done()
		s.poll(ctx, a)
		s.mu.Lock()
		delete(s.polling, a.ID)
		s.mu.Unlock()
		s.signal(eventPoll)
		select {
		case s.pollDone <- struct{}{}:
		default:
		}
	}()
	return due
}

// poll observes a monitor and acts on what it saw:
//
//   - the first observation after creation (or after its trigger changed)
//     is recorded as the baseline and launches nothing;
//   - an observation equal to the recorded one does nothing;
//   - a different one is recorded as a pending launch (durable), then
//     launched: the fire that queues the run records the observation and
//     clears the pending launch in the same transaction;
//   - a pending launch left by an earlier poll (the launch failed, or its
//     process died) is launched again on every poll until a fire hands it
//     over, with its original nominal time, so it can never launch twice.
func (s *Scheduler) poll(ctx context.Context, a *store.Automation) {
	seen, obsErr := s.dig.observe(ctx, a.Trigger)
	if ctx.Err() != nil {
		return
	}
	cur, err := s.cfg.Store.GetAutomation(ctx, a.ID)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			s.log.Warn("read automation", "automation", a.Key, "err", err)
		}
		return
	}
	if !cur.Enabled || !cur.Trigger.Equal(a.Trigger) {
		return // paused or changed while we looked
	}
	now := s.cfg.Clock.Now()
	st := cur.State
	switch {
	case st.Pending != nil:
		s.launch(ctx, cur)
	case obsErr != nil:
		s.recordError(ctx, cur, obsErr)
	case st.Observation == "":
		empty := ""
		s.record(ctx, cur, store.RecordParams{ExpectObservation: &empty, Baseline: seen, ObservedAt: now, Error: clearErr(st)})
	case seen != st.Observation:
		nominal := now.UTC().Truncate(time.Second)
		if !nominal.After(st.Cursor) {
			nominal = st.Cursor.Truncate(time.Second).Add(time.Second)
		}
		old := st.Observation
		b, err := s.storeRecord(ctx, store.RecordParams{
			AutomationID:      cur.ID,
			ExpectObservation: &old,
			Pending:           &store.PendingLaunch{Nominal: nominal, Observation: seen, Since: now},
		})
		if err != nil {
			if !errors.Is(err, store.ErrStale) {
				s.log.Warn("record pending launch", "automation", cur.Key, "err", err)
			}
			return
		}
		s.launch(ctx, b)
	}
}

func clearErr(st store.AutomationState) string {
	if st.LastError != "" {
		return "-"
	}
	return ""
}

// launch hands a monitor's pending launch over: one fire queues the run,
// records the observation and clears the pending launch. On failure the
// pending launch stays, with the attempt counted, for the next poll.
func (s *Scheduler) launch(ctx context.Context, a *store.Automation) {
	p := *a.State.Pending
	err := s.fire(ctx, a, store.FireParams{Nominal: p.Nominal, Observation: p.Observation})
	fireErr := err != nil
	if err == nil {
		b, gerr := s.cfg.Store.GetAutomation(ctx, a.ID)
		if gerr != nil || b.State.Pending == nil || !b.State.Pending.Nominal.Equal(p.Nominal) {
			return // handed over
		}
		// The slot was taken (the cursor moved past it): launch the change
		// under a new nominal time on the next poll.
		err = fmt.Errorf("slot %s was already fired", p.Nominal.Format(time.RFC3339))
		p.Nominal = b.State.Cursor.Truncate(time.Second).Add(time.Second)
	}
	if errors.Is(err, store.ErrPaused) || ctx.Err() != nil {
		return
	}
	p.Attempts++
	p.Error = err.Error()
	s.log.Warn("launch monitor change", "automation", a.Key, "attempt", p.Attempts, "err", err)
	rec := store.RecordParams{Pending: &p, Error: "launch: " + err.Error()}
	if fireErr {
		// The launch itself failed (not a slot taken meanwhile): a failed
		// fire, counted towards the pause.
		rec.FireFailed, rec.Pause = true, s.pauseRule(a, rec.Error)
	}
	s.recordPausing(ctx, a, rec)
}
