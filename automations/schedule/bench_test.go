package schedule

import (
	"testing"
	"time"
)

// BenchmarkNext measures Next for a plain zone and a DST zone, minutely and
// daily specs; the scheduler calls it once per automation per wake-up.
func BenchmarkNext(b *testing.B) {
	cases := []struct{ name, expr, tz string }{
		{"utc/minutely", "* * * * *", "UTC"},
		{"utc/daily", "0 3 * * *", "UTC"},
		{"new_york/minutely", "* * * * *", "America/New_York"},
		{"new_york/weekdays", "0 3 * * 1-5", "America/New_York"},
	}
	from := time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			c := mustCron(b, bc.expr, bc.tz)
			b.ReportAllocs()
			t := from
			for b.Loop() {
				t = c.Next(t)
			}
		})
	}
}

// BenchmarkDue measures one steady-state wake-up and a month-long outage.
func BenchmarkDue(b *testing.B) {
	c := mustCron(b, "* * * * *", "America/New_York")
	cases := []struct {
		name      string
		last, now time.Time
	}{
		{"steady", time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), time.Date(2026, 5, 1, 10, 1, 2, 0, time.UTC)},
		{"month_outage", time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC), time.Date(2026, 5, 1, 10, 1, 2, 0, time.UTC)},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Due(c, DueParams{LastNominal: bc.last, Now: bc.now, Policy: MissedOnce})
			}
		})
	}
}
