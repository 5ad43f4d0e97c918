package store

import (
	"testing"
	"time"
)

func TestWriteTimes(t *testing.T) {
	t.Parallel()
	given := time.Date(2026, 5, 1, 10, 0, 0, 1_500_000, time.FixedZone("X", 3600))
	if got := At(given); !got.Equal(given) {
		t.Errorf("At(given) = %v, want it unchanged", got)
	}
	before := time.Now()
	if got := At(time.Time{}); got.Before(before) || got.After(time.Now()) {
		t.Errorf("At(zero) = %v, want the current time", got)
	}
	if got := Millis(given); got.Location() != time.UTC || got.Nanosecond() != 1_000_000 || !got.Equal(given.Truncate(time.Millisecond)) {
		t.Errorf("Millis = %v, want UTC to the millisecond", got)
	}
	msgs := []*Message{{CreatedAt: given.Add(-time.Hour)}, {CreatedAt: given}, {}}
	if got := AppendTime(msgs); !got.Equal(Millis(given)) {
		t.Errorf("AppendTime = %v, want the latest given %v", got, Millis(given))
	}
	if got := AppendTime([]*Message{{}}); got.Before(before.Truncate(time.Millisecond)) {
		t.Errorf("AppendTime without times = %v, want the current time", got)
	}
}
