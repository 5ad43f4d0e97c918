package schedule

import (
	"fmt"
	"strings"
	"time"
)

// Interval bounds.
const (
	MinEvery = time.Second
	MaxEvery = 366 * 24 * time.Hour
)

// ParseEvery parses an interval written as a Go duration ("30m", "1h30m",
// "10s") between MinEvery and MaxEvery inclusive.
func ParseEvery(s string) (time.Duration, error) {
	wrap := func(format string, args ...any) error {
		return fmt.Errorf("parse interval %s: %w: %s", quoteShort(s), ErrInvalidInterval, fmt.Sprintf(format, args...))
	}
	if err := checkText(s, 64); err != nil {
		return 0, wrap("%v", err)
	}
	t := strings.Trim(s, " ")
	if t == "" {
		return 0, wrap("empty")
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		if strings.ContainsAny(t, "dDwW") {
			return 0, wrap("want a duration such as 30m or 1h30m (units h, m, s; for days use hours, as in 24h)")
		}
		return 0, wrap("want a duration such as 30m or 1h30m (units h, m, s)")
	}
	switch {
	case d < MinEvery:
		return 0, wrap("%v is below the minimum of %v", d, MinEvery)
	case d > MaxEvery:
		return 0, wrap("%v is above the maximum of %v (366 days)", d, MaxEvery)
	}
	return d, nil
}

// IntervalParams are the inputs of NextInterval, as recorded in the store.
type IntervalParams struct {
	// Every is the interval; values outside [MinEvery, MaxEvery] are
	// clamped (validate with ParseEvery first).
	Every time.Duration
	// Created is when the automation was created (or first seen): the
	// anchor until a run has finished. Left zero, the first tick is due at
	// once.
	Created time.Time
	// LastStart and LastFinish are the start and finish of the latest run,
	// zero if none.
	LastStart, LastFinish time.Time
	// Now is the scheduler's clock.
	Now time.Time
}

// IntervalResult is the next tick of an interval automation.
type IntervalResult struct {
	// Nominal is the tick, anchor + Every, UTC, rounded up to the second
	// (never before Every has elapsed since the anchor): the fire's nominal
	// time even when it fires late. Zero while InFlight.
	Nominal time.Time
	// Due reports that Now has reached Nominal: fire it now, once.
	Due bool
	// Missed counts whole intervals elapsed past Nominal when Due: ticks
	// that did not queue.
	Missed int
	// InFlight is set when a run started after the last finish: the next
	// tick is measured from its completion, so there is none yet.
	InFlight bool
}

// NextInterval computes the next tick of an interval automation: Every after
// the last finish, or after creation when nothing has finished. It depends
// only on its arguments, so a restarted scheduler reading the same records
// keeps the cadence, and racing schedulers agree on the nominal time. An
// overdue tick is due now and fires once; ticks never queue, since the next
// one is measured from the completion of the run this one starts.
func NextInterval(p IntervalParams) IntervalResult {
	every := min(max(p.Every, MinEvery), MaxEvery)
	if !p.LastStart.IsZero() && p.LastStart.After(p.LastFinish) {
		return IntervalResult{InFlight: true}
	}
	anchor := p.Created
	if !p.LastFinish.IsZero() {
		anchor = p.LastFinish
	}
	res := IntervalResult{Nominal: ceilSecond(anchor.Add(every)).UTC()}
	if !p.Now.Before(res.Nominal) {
		res.Due = true
		res.Missed = int(p.Now.Sub(res.Nominal) / every)
	}
	return res
}

// ceilSecond rounds t up to the second: a tick rounded down could come
// before Every has elapsed since the completion it is measured from.
func ceilSecond(t time.Time) time.Time {
	if c := t.Truncate(time.Second); !c.Equal(t) {
		return c.Add(time.Second)
	}
	return t
}
