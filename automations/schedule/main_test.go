package schedule

import (
	"testing"
	"time"
	_ "time/tzdata" // zone data for machines without a system copy

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// at parses an RFC 3339 instant, failing the test on a typo.
func at(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("bad instant %q: %v", s, err)
	}
	return v
}

// mustCron parses a cron spec, failing the test on error.
func mustCron(t testing.TB, expr, tz string) *Cron {
	t.Helper()
	c, err := ParseCron(expr, tz)
	if err != nil {
		t.Fatalf("ParseCron(%q, %q): %v", expr, tz, err)
	}
	return c
}

// mustZone loads a zone, failing the test on error.
func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load zone %s: %v", name, err)
	}
	return loc
}
