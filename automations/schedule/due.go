package schedule

import (
	"fmt"
	"time"
)

// MissedPolicy says what happens to cron slots that passed while no
// scheduler was running (or it was late by more than the grace).
type MissedPolicy string

const (
	// MissedSkip counts missed slots and fires none of them (the default).
	MissedSkip MissedPolicy = "skip"
	// MissedOnce fires the latest missed slot once, as a catch-up, and
	// counts the others.
	MissedOnce MissedPolicy = "once"
)

// ParseMissedPolicy parses "skip" or "once"; "" is MissedSkip.
func ParseMissedPolicy(s string) (MissedPolicy, error) {
	switch MissedPolicy(s) {
	case "", MissedSkip:
		return MissedSkip, nil
	case MissedOnce:
		return MissedOnce, nil
	}
	return "", fmt.Errorf("parse missed-run policy %s: %w (want skip or once)", quoteShort(s), ErrInvalidPolicy)
}

// DefaultGrace is how late a slot may fire and still count as on time.
const DefaultGrace = time.Minute

// MaxMissedCount caps DueResult.Missed: counting every slot of a long outage
// (a minutely spec over a month) would cost more than it tells.
const MaxMissedCount = 1000

// DueParams are the inputs of Due.
type DueParams struct {
	// LastNominal is the latest slot already accounted for (fired or
	// counted as missed): DueResult.LastNominal of the previous call, or the
	// automation's creation time before the first. Only slots strictly after
	// it are considered.
	LastNominal time.Time
	// Now is the scheduler's clock.
	Now time.Time
	// Policy is MissedSkip or MissedOnce; anything else is MissedSkip.
	Policy MissedPolicy
	// Grace is how late a slot may be and still fire under MissedSkip;
	// zero or negative means DefaultGrace.
	Grace time.Duration
}

// DueResult is what a scheduler does on this wake-up. All times are UTC,
// whole seconds.
type DueResult struct {
	// Fire is the nominal slot to fire now, or zero if none is due. At most
	// one slot fires per call.
	Fire time.Time
	// CatchUp is set when Fire is late by more than the grace and fires
	// only because the policy is MissedOnce.
	CatchUp bool
	// Missed counts the slots in (LastNominal, Now] that do not fire,
	// saturating at MaxMissedCount.
	Missed int
	// LastNominal is the latest slot in (LastNominal, Now], fired or missed:
	// store it and pass it to the next call (with the fire, in the same
	// transaction). It equals the argument when no slot was due.
	LastNominal time.Time
	// Next is the first slot after both Now and LastNominal: when to wake
	// up. Zero if the spec has none within five years.
	Next time.Time
}

// Due decides which cron slot, if any, fires at p.Now. It is a pure
// function of its arguments: calling it again with the returned LastNominal
// and the same Now fires nothing, and two schedulers with the same inputs
// agree on the nominal time.
//
// The latest slot at or before Now fires if it is late by at most the grace;
// under MissedOnce it fires even when later than that (CatchUp). Every other
// slot since LastNominal is counted in Missed. If the clock went back before
// LastNominal nothing fires and Next stays after LastNominal, so no slot is
// fired twice.
func Due(c *Cron, p DueParams) DueResult {
	grace := p.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	res := DueResult{LastNominal: nominal(p.LastNominal)}

	first := c.Next(p.LastNominal)
	if first.IsZero() || first.After(p.Now) {
		res.Next = nominal(c.Next(latest(p.Now, p.LastNominal)))
		return res
	}

	// Walk the slots up to Now; past MaxMissedCount, find the latest by
	// bisection instead.
	last, count := first, 0
	for {
		n := c.Next(last)
		if n.IsZero() || n.After(p.Now) {
			break
		}
		last = n
		count++
		if count >= MaxMissedCount {
			last = lastSlotAtOrBefore(c, last, p.Now)
			break
		}
	}

	res.LastNominal = nominal(last)
	res.Next = nominal(c.Next(p.Now))
	res.Missed = count
	switch onTime := p.Now.Sub(last) <= grace; {
	case onTime:
		res.Fire = res.LastNominal
	case p.Policy == MissedOnce:
		res.Fire = res.LastNominal
		res.CatchUp = true
	default:
		res.Missed++
	}
	res.Missed = min(res.Missed, MaxMissedCount)
	return res
}

// lastSlotAtOrBefore returns the latest slot at or before now, given a slot
// known to be at or before now. Slots are whole seconds and Next is
// non-decreasing, so it bisects over whole seconds x for the largest with
// Next(x) <= now; that Next(x) is the answer.
func lastSlotAtOrBefore(c *Cron, known, now time.Time) time.Time {
	lo := known.Truncate(time.Second) // Next(lo) <= now, or known is the answer
	if n := c.Next(lo); n.IsZero() || n.After(now) {
		return known
	}
	hi := now.Truncate(time.Second) // Next(hi) > now: no whole second in (hi, now]
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if n := c.Next(mid); !n.IsZero() && !n.After(now) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return c.Next(lo)
}

// nominal normalizes a slot for use in a fire id: UTC, whole seconds.
func nominal(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.Truncate(time.Second).UTC()
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
