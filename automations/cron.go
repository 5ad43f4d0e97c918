package automations

// Cron visits: the slot due by the automation's schedule and missed policy.

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/automations/schedule"
	"github.com/cairnhq/cairn/store"
)

// cursor is the slot a's schedule counts from.
func cursor(a *store.Automation) time.Time {
	if !a.State.Cursor.IsZero() {
		return a.State.Cursor
	}
	return a.CreatedAt
}

// cronKey names a parsed cron spec in Scheduler.crons.
func cronKey(t store.AutomationTrigger) string { return t.TZ + "\x00" + t.Cron }

// cron returns t's parsed spec. Specs are parsed once (parsing loads the
// zone's data from disk) and kept while an automation uses them.
func (s *Scheduler) cron(t store.AutomationTrigger) (*schedule.Cron, error) {
	key := cronKey(t)
	s.mu.Lock()
	c, ok := s.crons[key]
	s.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := schedule.ParseCron(t.Cron, t.TZ)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.crons[key] = c
	s.mu.Unlock()
	return c, nil
}

func (s *Scheduler) visitCron(ctx context.Context, a *store.Automation, now time.Time) time.Time {
	c, err := s.cron(a.Trigger)
	if err != nil {
		s.recordError(ctx, a, err)
		return time.Time{}
	}
	from := cursor(a)
	res := schedule.Due(c, schedule.DueParams{LastNominal: from, Now: now, Policy: schedule.MissedPolicy(a.Missed)})
	switch {
	case !res.Fire.IsZero():
		err := s.fire(ctx, a, store.FireParams{Nominal: res.Fire, Missed: int64(res.Missed), NextDue: res.Next})
		if err != nil {
			// The slot is lost: count it as missed rather than retry it
			// on every pass.
			s.fireFailed(ctx, a, fmt.Errorf("fire %s: %w", res.Fire.Format(time.RFC3339), err), store.RecordParams{Cursor: res.LastNominal, Missed: int64(res.Missed) + 1, NextDue: res.Next})
		}
	case res.LastNominal.After(from):
		s.record(ctx, a, store.RecordParams{Cursor: res.LastNominal, Missed: int64(res.Missed), NextDue: res.Next})
	case !res.Next.Equal(a.State.NextDue):
		s.record(ctx, a, store.RecordParams{NextDue: res.Next})
	}
	if !res.Next.IsZero() {
		// The cursor the store holds now, if the writes above went
		// through (arm's fire expects it, so a miss is only a miss).
		sl := slot{a: a, at: res.Next, cursor: a.State.Cursor, from: from}
		if res.LastNominal.After(from) {
			sl.cursor, sl.from = res.LastNominal, res.LastNominal
		}
		s.mu.Lock()
		s.soon = append(s.soon, sl)
		s.mu.Unlock()
	}
	return res.Next
}
