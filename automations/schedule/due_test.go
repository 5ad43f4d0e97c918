package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDue(t *testing.T) {
	t.Parallel()
	const hourly = "0 * * * *"
	tests := []struct {
		name        string
		expr        string
		last, now   string
		policy      MissedPolicy
		grace       time.Duration
		wantFire    string // "" = nothing fires
		wantCatchUp bool
		wantMissed  int
		wantLast    string
		wantNext    string
	}{
		{name: "on time", expr: hourly, last: "2026-05-01T10:00:00Z", now: "2026-05-01T11:00:00Z",
			wantFire: "2026-05-01T11:00:00Z", wantLast: "2026-05-01T11:00:00Z", wantNext: "2026-05-01T12:00:00Z"},
		{name: "a little late", expr: hourly, last: "2026-05-01T10:00:00Z", now: "2026-05-01T11:00:05.25Z",
			wantFire: "2026-05-01T11:00:00Z", wantLast: "2026-05-01T11:00:00Z", wantNext: "2026-05-01T12:00:00Z"},
		{name: "not yet", expr: hourly, last: "2026-05-01T10:00:00Z", now: "2026-05-01T10:59:59.999Z",
			wantLast: "2026-05-01T10:00:00Z", wantNext: "2026-05-01T11:00:00Z"},
		{name: "late by exactly the grace fires", expr: hourly, last: "2026-05-01T10:00:00Z", now: "2026-05-01T11:01:00Z",
			wantFire: "2026-05-01T11:00:00Z", wantLast: "2026-05-01T11:00:00Z", wantNext: "2026-05-01T12:00:00Z"},
		{name: "skip: late beyond the grace is missed", expr: hourly, last: "2026-05-01T10:00:00Z", now: "2026-05-01T11:01:01Z",
			wantMissed: 1, wantLast: "2026-05-01T11:00:00Z", wantNext: "2026-05-01T12:00:00Z"},
		{name: "skip: custom grace", expr: hourly, last: "2026-05-01T10:00:00Z", now: "2026-05-01T11:04:00Z", grace: 5 * time.Minute,
			wantFire: "2026-05-01T11:00:00Z", wantLast: "2026-05-01T11:00:00Z", wantNext: "2026-05-01T12:00:00Z"},
		{name: "skip: outage counts every slot", expr: hourly, last: "2026-05-01T10:00:00Z", now: "2026-05-01T14:30:00Z",
			wantMissed: 4, wantLast: "2026-05-01T14:00:00Z", wantNext: "2026-05-01T15:00:00Z"},
		{name: "skip: outage ending within the grace fires the current slot", expr: hourly, last: "2026-05-01T10:00:00Z", now: "2026-05-01T14:00:30Z",
			wantFire: "2026-05-01T14:00:00Z", wantMissed: 3, wantLast: "2026-05-01T14:00:00Z", wantNext: "2026-05-01T15:00:00Z"},
		{name: "once: outage fires one catch-up for the latest slot", expr: hourly, last: "2026-05-01T10:00:00Z", now: "2026-05-01T14:30:00Z", policy: MissedOnce,
			wantFire: "2026-05-01T14:00:00Z", wantCatchUp: true, wantMissed: 3, wantLast: "2026-05-01T14:00:00Z", wantNext: "2026-05-01T15:00:00Z"},
		{name: "once: a single missed slot", expr: hourly, last: "2026-05-01T10:00:00Z", now: "2026-05-01T11:30:00Z", policy: MissedOnce,
			wantFire: "2026-05-01T11:00:00Z", wantCatchUp: true, wantLast: "2026-05-01T11:00:00Z", wantNext: "2026-05-01T12:00:00Z"},
		{name: "once: current slot within the grace is the catch-up", expr: hourly, last: "2026-05-01T10:00:00Z", now: "2026-05-01T14:00:30Z", policy: MissedOnce,
			wantFire: "2026-05-01T14:00:00Z", wantMissed: 3, wantLast: "2026-05-01T14:00:00Z", wantNext: "2026-05-01T15:00:00Z"},
		{name: "once: nothing missed, nothing extra", expr: hourly, last: "2026-05-01T10:00:00Z", now: "2026-05-01T10:30:00Z", policy: MissedOnce,
			wantLast: "2026-05-01T10:00:00Z", wantNext: "2026-05-01T11:00:00Z"},
		{name: "first fire after creation mid-slot", expr: hourly, last: "2026-05-01T10:17:45.5Z", now: "2026-05-01T11:00:00Z",
			wantFire: "2026-05-01T11:00:00Z", wantLast: "2026-05-01T11:00:00Z", wantNext: "2026-05-01T12:00:00Z"},
		{name: "created exactly on a slot: that slot is not due", expr: hourly, last: "2026-05-01T10:00:00Z", now: "2026-05-01T10:00:00Z",
			wantLast: "2026-05-01T10:00:00Z", wantNext: "2026-05-01T11:00:00Z"},
		{name: "clock went back: nothing fires, next stays after the last slot", expr: hourly, last: "2026-05-01T12:00:00Z", now: "2026-05-01T10:30:00Z",
			wantLast: "2026-05-01T12:00:00Z", wantNext: "2026-05-01T13:00:00Z"},
		{name: "skip: month-long outage saturates the count", expr: "* * * * *", last: "2026-05-01T00:00:00Z", now: "2026-05-31T10:00:20Z",
			wantFire: "2026-05-31T10:00:00Z", wantMissed: MaxMissedCount, wantLast: "2026-05-31T10:00:00Z", wantNext: "2026-05-31T10:01:00Z"},
		{name: "once: long outage finds the latest slot by bisection", expr: "* 3 * * *", last: "2026-05-01T00:00:00Z", now: "2026-05-30T10:00:00Z", policy: MissedOnce,
			wantFire: "2026-05-30T03:59:00Z", wantCatchUp: true, wantMissed: MaxMissedCount, wantLast: "2026-05-30T03:59:00Z", wantNext: "2026-05-31T03:00:00Z"},
		{name: "skip: long outage, latest slot found by bisection", expr: "* 3 * * *", last: "2026-05-01T00:00:00Z", now: "2026-05-30T10:00:00Z",
			wantMissed: MaxMissedCount, wantLast: "2026-05-30T03:59:00Z", wantNext: "2026-05-31T03:00:00Z"},
		{name: "nominals are UTC in a zoned spec", expr: "CRON_TZ=America/New_York 30 2 * * *", last: "2026-03-07T12:00:00-05:00", now: "2026-03-08T03:00:10-04:00",
			wantFire: "2026-03-08T07:00:00Z", wantLast: "2026-03-08T07:00:00Z", wantNext: "2026-03-09T06:30:00Z"},
		{name: "fall back: the repeated 01:30 is not due again", expr: "CRON_TZ=America/New_York 30 1 * * *", last: "2026-11-01T01:30:00-04:00", now: "2026-11-01T01:30:10-05:00",
			wantLast: "2026-11-01T05:30:00Z", wantNext: "2026-11-02T06:30:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustCron(t, tt.expr, zoneUnlessPrefixed(tt.expr))
			got := Due(c, DueParams{LastNominal: at(t, tt.last), Now: at(t, tt.now), Policy: tt.policy, Grace: tt.grace})
			if got.Fire.IsZero() != (tt.wantFire == "") || (tt.wantFire != "" && !got.Fire.Equal(at(t, tt.wantFire))) {
				t.Errorf("Fire = %v, want %q", got.Fire, tt.wantFire)
			}
			if got.CatchUp != tt.wantCatchUp {
				t.Errorf("CatchUp = %v, want %v", got.CatchUp, tt.wantCatchUp)
			}
			if got.Missed != tt.wantMissed {
				t.Errorf("Missed = %d, want %d", got.Missed, tt.wantMissed)
			}
			if !got.LastNominal.Equal(at(t, tt.wantLast)) {
				t.Errorf("LastNominal = %v, want %s", got.LastNominal, tt.wantLast)
			}
			if !got.Next.Equal(at(t, tt.wantNext)) {
				t.Errorf("Next = %v, want %s", got.Next, tt.wantNext)
			}
			for name, v := range map[string]time.Time{"Fire": got.Fire, "LastNominal": got.LastNominal, "Next": got.Next} {
				if !v.IsZero() && (v.Location() != time.UTC || v.Nanosecond() != 0) {
					t.Errorf("%s = %v, want UTC whole seconds", name, v)
				}
			}

			// Calling again with the returned LastNominal fires nothing and
			// misses nothing: the scheduler may wake up twice.
			again := Due(c, DueParams{LastNominal: got.LastNominal, Now: at(t, tt.now), Policy: tt.policy, Grace: tt.grace})
			if !again.Fire.IsZero() || again.Missed != 0 || !again.LastNominal.Equal(got.LastNominal) || !again.Next.Equal(got.Next) {
				t.Errorf("second call at the same instant: %+v, want nothing due and Next %v", again, got.Next)
			}
		})
	}
}

// zoneUnlessPrefixed is UTC for specs without a CRON_TZ= prefix.
func zoneUnlessPrefixed(expr string) string {
	if strings.HasPrefix(expr, "CRON_TZ=") {
		return ""
	}
	return "UTC"
}

// TestDueSchedulerLoop drives Due like a scheduler would, waking every 20
// seconds across New York's DST days: every slot Next yields fires exactly
// once, in order, nothing is missed, and nothing else fires.
func TestDueSchedulerLoop(t *testing.T) {
	t.Parallel()
	for _, day := range []string{"2026-03-08T00:00:00-05:00", "2026-11-01T00:00:00-04:00"} {
		for _, expr := range []string{"30 * * * *", "*/7 1-3 * * *", "30 1,2 * * *"} {
			c := mustCron(t, expr, "America/New_York")
			start := at(t, day)
			end := start.Add(6 * time.Hour)

			var want []time.Time
			for n := c.Next(start); n.Before(end); n = c.Next(n) {
				want = append(want, n.UTC())
			}
			var got []time.Time
			last := start
			for now := start; now.Before(end); now = now.Add(20 * time.Second) {
				r := Due(c, DueParams{LastNominal: last, Now: now})
				if r.Missed != 0 {
					t.Fatalf("%s %s: missed %d at %v", day, expr, r.Missed, now)
				}
				if !r.Fire.IsZero() {
					got = append(got, r.Fire)
				}
				last = r.LastNominal
			}
			if len(got) != len(want) {
				t.Fatalf("%s %s: fired %v, want %v", day, expr, got, want)
			}
			for i := range got {
				if !got[i].Equal(want[i]) {
					t.Fatalf("%s %s: fire %d = %v, want %v", day, expr, i, got[i], want[i])
				}
			}
		}
	}
}

func TestParseMissedPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want MissedPolicy
		err  bool
	}{
		{"", MissedSkip, false},
		{"skip", MissedSkip, false},
		{"once", MissedOnce, false},
		{"all", "", true},
		{"Skip", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseMissedPolicy(tt.in)
			if (err != nil) != tt.err || got != tt.want {
				t.Fatalf("ParseMissedPolicy(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.err)
			}
			if err != nil && !errors.Is(err, ErrInvalidPolicy) {
				t.Errorf("error %v is not ErrInvalidPolicy", err)
			}
		})
	}
}
