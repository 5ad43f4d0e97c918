package automations

// Interval visits: a delay measured from the previous completion, or with
// overlap allow a fixed rate measured from the previous tick.

import (
	"context"
	"time"

	"github.com/cairnhq/cairn/automations/schedule"
	"github.com/cairnhq/cairn/store"
)

// retryLater keeps an automation whose fire failed from firing again before
// at; blocked reports whether it is still held back.
func (s *Scheduler) retryLater(id string, at time.Time) {
	s.mu.Lock()
	s.retryAt[id] = at
	s.mu.Unlock()
}

func (s *Scheduler) blocked(id string, now time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.retryAt[id]
	if !ok {
		return time.Time{}, false
	}
	if !now.Before(at) {
		delete(s.retryAt, id)
		return time.Time{}, false
	}
	return at, true
}

// visitDelay handles an interval measured from the previous completion.
func (s *Scheduler) visitDelay(ctx context.Context, a *store.Automation, now time.Time) time.Time {
	if a.State.InFlight() {
		return time.Time{} // watched: its settle wakes the scheduler
	}
	ev := every(a.Trigger)
	anchor := a.CreatedAt
	if !a.State.LastFinish.IsZero() {
		anchor = a.State.LastFinish
	}
	shift := s.clockShift(a.ID, anchor, now, true)
	res := schedule.NextInterval(schedule.IntervalParams{Every: ev, Created: a.CreatedAt, LastStart: a.State.LastStart, LastFinish: a.State.LastFinish, Now: now.Add(shift)})
	if res.InFlight {
		return time.Time{}
	}
	if !res.Due {
		if !res.Nominal.Equal(a.State.NextDue) {
			s.record(ctx, a, store.RecordParams{NextDue: res.Nominal})
		}
		return res.Nominal.Add(-shift)
	}
	if at, ok := s.blocked(a.ID, now); ok {
		return at
	}
	nominal := res.Nominal
	if c := a.State.Cursor; !nominal.After(c) {
		nominal = c.Truncate(time.Second).Add(time.Second)
	}
	if err := s.fire(ctx, a, store.FireParams{Nominal: nominal, Missed: int64(res.Missed)}); err != nil {
		s.fireFailed(ctx, a, err, store.RecordParams{})
		s.retryLater(a.ID, now.Add(ev))
		return now.Add(ev)
	}
	return time.Time{}
}

// visitRate handles an interval with overlap allow: ticks every Every from
// the previous tick, whether or not runs finished. Missed ticks do not
// queue: an overdue one fires once and the others are counted.
func (s *Scheduler) visitRate(ctx context.Context, a *store.Automation, now time.Time) time.Time {
	ev := every(a.Trigger)
	from := a.State.Cursor
	if from.IsZero() {
		from = a.CreatedAt.Truncate(time.Second)
	}
	shift := s.clockShift(a.ID, from, now, false)
	wall := now
	now = now.Add(shift) // the clock as if it had not stepped back
	due := from.Add(ev)
	if now.Before(due) {
		if !due.Equal(a.State.NextDue) {
			s.record(ctx, a, store.RecordParams{NextDue: due})
		}
		return due.Add(-shift)
	}
	if at, ok := s.blocked(a.ID, wall); ok {
		return at
	}
	k := now.Sub(from) / ev
	nominal := from.Add(k * ev)
	next := nominal.Add(ev)
	if err := s.fire(ctx, a, store.FireParams{Nominal: nominal, Missed: int64(k - 1), NextDue: next}); err != nil {
		s.fireFailed(ctx, a, err, store.RecordParams{Cursor: nominal, Missed: int64(k), NextDue: next})
	}
	return next.Add(-shift)
}
