package automations

import (
	"time"

	"github.com/cairnhq/cairn/automations/schedule"
	"github.com/cairnhq/cairn/store"
)

// NextDue is when a fires next, computed from its spec and recorded state
// alone as a scheduler would at now, so a command can show it at once
// whether or not a scheduler runs: a due cron slot or interval tick is due
// now (its nominal time). An interval waiting for a run in flight is
// measured from the run's finish, so its next tick is at the earliest
// every after now (were the run to finish now). Zero when a is paused or
// when its cron has no slot within five years.
func NextDue(a *store.Automation, now time.Time) time.Time {
	if !a.Enabled {
		return time.Time{}
	}
	switch a.Trigger.Kind {
	case store.TriggerCron:
		c, err := schedule.ParseCron(a.Trigger.Cron, a.Trigger.TZ)
		if err != nil {
			return time.Time{}
		}
		res := schedule.Due(c, schedule.DueParams{LastNominal: cursor(a), Now: now, Policy: schedule.MissedPolicy(a.Missed)})
		if !res.Fire.IsZero() {
			return res.Fire
		}
		return res.Next
	case store.TriggerInterval:
		ev := every(a.Trigger)
		if a.Overlap == store.OverlapAllow {
			from := a.State.Cursor
			if from.IsZero() {
				from = a.CreatedAt.Truncate(time.Second)
			}
			return from.Add(ev)
		}
		res := schedule.NextInterval(schedule.IntervalParams{Every: ev, Created: a.CreatedAt, LastStart: a.State.LastStart, LastFinish: a.State.LastFinish, Now: now})
		if res.InFlight || a.State.InFlight() {
			from := now
			if a.State.LastStart.After(now) {
				from = a.State.LastStart
			}
			return schedule.NextInterval(schedule.IntervalParams{Every: ev, Created: from, Now: now}).Nominal
		}
		return res.Nominal
	case store.TriggerFiles, store.TriggerHTTP:
		if a.State.ObservedAt.IsZero() {
			return now.UTC().Truncate(time.Second) // polled as soon as a scheduler runs
		}
		return a.State.ObservedAt.Add(every(a.Trigger))
	}
	return time.Time{}
}

// Location is the zone a's times are shown in: its cron's zone, else the
// machine's.
func Location(a *store.Automation) *time.Location {
	if a.Trigger.Kind == store.TriggerCron {
		if c, err := schedule.ParseCron(a.Trigger.Cron, a.Trigger.TZ); err == nil {
			return c.Location()
		}
	}
	return time.Local
}

// ZonedTime formats t in loc with the zone's abbreviation and its UTC
// offset ("2026-03-02 09:00:00 CET UTC+01:00"), so a reader in any zone
// knows the instant; "-" for the zero time.
func ZonedTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format("2006-01-02 15:04:05 MST UTC-07:00")
}
