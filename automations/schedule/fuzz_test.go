package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzParseCron proves ParseCron never panics, that its own validation (not
// the last-resort recover) stops everything robfig's parser would panic on,
// and that an accepted spec behaves: it round-trips through String, and Next
// from sample instants (DST days included) is strictly later and never zero.
// The seed corpus runs in every `go test`.
func FuzzParseCron(f *testing.F) {
	seeds := []struct{ expr, tz string }{
		{"TZ=", ""}, {"CRON_TZ=", ""}, {"TZ= ", ""}, {"CRON_TZ= ", ""}, {"TZ=/../../etc", ""},
		{"TZ=/../../etc 0 * * * *", ""}, {"TZ=Europe/Paris", ""}, {"TZ=Europe/Paris 0 3 * * *", ""},
		{"CRON_TZ=Europe/Paris 0 3 * * *", "America/New_York"}, {"TZ=UTC TZ=UTC 0 * * * *", ""},
		{"CRON_TZ=Local 0 * * * *", ""}, {"TZ=x", ""}, {"TZ==", ""}, {"TZ= = =", ""},
		{"0 3 * * *", "Mars/Base"}, {"0 3 * * *", "../etc/passwd"}, {"0 3 * * *", "/etc/localtime"},
		{"0 3 * * *", "America"}, {"0 3 * * *", ""}, {"0 3 * * *", "Local"}, {"0 3 * * *", "UTC"},
		{"30 2 * * *", "America/New_York"}, {"30 1 * * *", "America/New_York"},
		{"15 2 * * *", "Australia/Lord_Howe"}, {"*/15 * * * *", "Antarctica/Troll"},
		{"0 0 30 2 *", ""}, {"0 0 31 4 *", ""}, {"0 0 29 2 *", "UTC"}, {"0 0 13 * 5", "UTC"},
		{"@every 1h", ""}, {"@every", ""}, {"@daily", "Europe/London"}, {"@", ""}, {"@@", ""},
		{"* * * * *", ""}, {"*/0 * * * *", ""}, {"0-59/61 * * * *", ""}, {"1-2-3 * * * *", ""},
		{"1/2/3 * * * *", ""}, {"-1 * * * *", ""}, {"99999999999999999999 * * * *", ""},
		{"? ? ? ? ?", ""}, {", , , , ,", ""}, {"- - - - -", ""}, {"/ / / / /", ""},
		{"0 3 * * mon-fri", ""}, {"0 3 * JAN-dec SUN", ""}, {"0 0 * * 7", ""},
		{strings.Repeat("*", 300), ""}, {strings.Repeat("0 ", 128), ""}, {"TZ=" + strings.Repeat("A/", 40) + " * * * * *", ""},
		{"0 3 * * *", strings.Repeat("Europe/", 20)}, {"0 3 * * lün", ""}, {"TZ=Europe/Zürich 0 3 * * *", ""},
		{"0 3 * * *", "Europe/Zürich"}, {"\xff\xfe", ""}, {"0\t3 * * *", ""}, {"0 3 * * *\n", ""},
		{"\u200b0 3 * * *", ""}, {"0 3 * * *", "Etc/GMT+12"}, {"0 3 * * *", "Pacific/Kiritimati"},
	}
	for _, s := range seeds {
		f.Add(s.expr, s.tz)
	}
	samples := []time.Time{
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 8, 6, 59, 59, 500, time.UTC),  // just before New York springs forward
		time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC),    // New York's first 01:30
		time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC),    // New York's second 01:30
		time.Date(2026, 10, 3, 15, 29, 0, 0, time.UTC),   // Lord Howe springs forward
		time.Date(2026, 10, 25, 0, 59, 59, 0, time.UTC),  // Europe falls back
		time.Date(2027, 12, 31, 23, 59, 59, 0, time.UTC), // year end
	}
	f.Fuzz(func(t *testing.T, expr, tz string) {
		c, err := ParseCron(expr, tz)
		if errors.Is(err, errParserPanic) {
			t.Fatalf("ParseCron(%q, %q) recovered a panic that validation should have stopped: %v", expr, tz, err)
		}
		if err != nil {
			if c != nil {
				t.Fatalf("ParseCron(%q, %q) returned a Cron and an error", expr, tz)
			}
			if !errors.Is(err, ErrInvalidCron) && !errors.Is(err, ErrUnknownZone) && !errors.Is(err, ErrNeverFires) {
				t.Fatalf("ParseCron(%q, %q) error %v wraps none of the package errors", expr, tz, err)
			}
			return
		}
		again, err := ParseCron(c.String(), "")
		if err != nil {
			t.Fatalf("String() %q of accepted (%q, %q) does not parse: %v", c.String(), expr, tz, err)
		}
		for _, s := range samples {
			n := c.Next(s)
			if n.IsZero() {
				t.Fatalf("%q: Next(%v) is zero for an accepted spec", c, s)
			}
			if !n.After(s) {
				t.Fatalf("%q: Next(%v) = %v, not after", c, s, n)
			}
			if n2 := again.Next(s); !n2.Equal(n) {
				t.Fatalf("%q: round-tripped spec gives Next(%v) = %v, original %v", c, s, n2, n)
			}
			if n3 := c.Next(n); !n3.After(n) {
				t.Fatalf("%q: Next(%v) = %v, not after", c, n, n3)
			}
		}
	})
}
