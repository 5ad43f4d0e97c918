package store

import "time"

// At is the time of a write: t, or the current time when t is zero.
// Writes take their time from their params (so callers and tests decide
// it); a zero time falls back to the clock for callers not yet passing
// one.
func At(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

// Millis is t as stores keep it: UTC, truncated to the millisecond.
func Millis(t time.Time) time.Time {
	return t.UTC().Truncate(time.Millisecond)
}
