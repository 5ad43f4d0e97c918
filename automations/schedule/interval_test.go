package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseEvery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		want     time.Duration
		contains string // error text; "" = valid
	}{
		{"30m", 30 * time.Minute, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"10s", 10 * time.Second, ""},
		{"1s", time.Second, ""},
		{"1500ms", 1500 * time.Millisecond, ""},
		{" 5m ", 5 * time.Minute, ""},
		{"8784h", MaxEvery, ""},
		{"999ms", 0, "999ms is below the minimum of 1s"},
		{"0s", 0, "below the minimum"},
		{"-1m", 0, "below the minimum"},
		{"8784h0m1s", 0, "above the maximum of 8784h0m0s (366 days)"},
		{"", 0, "empty"},
		{"   ", 0, "empty"},
		{"soon", 0, "want a duration such as 30m"},
		{"30", 0, "want a duration such as 30m"},
		{"1d", 0, "for days use hours, as in 24h"},
		{"2w", 0, "for days use hours"},
		{"5m\n", 0, "control character"},
		{strings.Repeat("9", 100) + "h", 0, "longer than 64 bytes"},
		{"99999999999h", 0, "want a duration"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseEvery(tt.in)
			if tt.contains == "" {
				if err != nil || got != tt.want {
					t.Fatalf("ParseEvery(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseEvery(%q) = %v, want error", tt.in, got)
			}
			if !errors.Is(err, ErrInvalidInterval) || !strings.Contains(err.Error(), tt.contains) || !strings.HasPrefix(err.Error(), "parse interval ") {
				t.Errorf("ParseEvery(%q) error %q: want ErrInvalidInterval containing %q", tt.in, err, tt.contains)
			}
		})
	}
}

func TestNextInterval(t *testing.T) {
	t.Parallel()
	const created = "2026-05-01T10:00:00.7Z"
	tests := []struct {
		name                string
		every               time.Duration
		lastStart, lastFin  string
		now                 string
		wantNominal         string // "" = zero
		wantDue, wantFlight bool
		wantMissed          int
	}{
		{name: "never ran: measured from creation, rounded up", every: 30 * time.Minute, now: "2026-05-01T10:10:00Z",
			wantNominal: "2026-05-01T10:30:01Z"},
		{name: "never ran: not due before creation plus every", every: 30 * time.Minute, now: "2026-05-01T10:30:00.9Z",
			wantNominal: "2026-05-01T10:30:01Z"},
		{name: "never ran: due at creation plus every, rounded up", every: 30 * time.Minute, now: "2026-05-01T10:30:01Z",
			wantNominal: "2026-05-01T10:30:01Z", wantDue: true},
		{name: "measured from the last finish, not the start", every: 30 * time.Minute,
			lastStart: "2026-05-01T10:30:01Z", lastFin: "2026-05-01T10:35:20.9Z", now: "2026-05-01T10:40:00Z",
			wantNominal: "2026-05-01T11:05:21Z"},
		{name: "a 1s interval is not due 0.1s after a finish", every: time.Second,
			lastStart: "2026-05-01T10:30:01Z", lastFin: "2026-05-01T10:35:20.9Z", now: "2026-05-01T10:35:21Z",
			wantNominal: "2026-05-01T10:35:22Z"},
		{name: "due exactly at finish plus every", every: 30 * time.Minute,
			lastStart: "2026-05-01T10:30:01Z", lastFin: "2026-05-01T10:35:20Z", now: "2026-05-01T11:05:20Z",
			wantNominal: "2026-05-01T11:05:20Z", wantDue: true},
		{name: "first run in flight", every: 30 * time.Minute, lastStart: "2026-05-01T10:30:01Z", now: "2026-05-01T12:00:00Z",
			wantFlight: true},
		{name: "later run in flight", every: 30 * time.Minute,
			lastStart: "2026-05-01T11:05:21Z", lastFin: "2026-05-01T10:35:20Z", now: "2026-05-01T12:00:00Z",
			wantFlight: true},
		{name: "overdue fires once with the nominal tick, not now", every: 30 * time.Minute,
			lastStart: "2026-05-01T10:30:01Z", lastFin: "2026-05-01T10:35:20Z", now: "2026-05-01T15:00:00Z",
			wantNominal: "2026-05-01T11:05:20Z", wantDue: true, wantMissed: 7},
		{name: "after the overdue run: measured from its completion", every: 30 * time.Minute,
			lastStart: "2026-05-01T15:00:00Z", lastFin: "2026-05-01T15:01:00Z", now: "2026-05-01T15:02:00Z",
			wantNominal: "2026-05-01T15:31:00Z"},
		{name: "clock behind the anchor: not due", every: 10 * time.Second,
			lastStart: "2026-05-01T11:00:00Z", lastFin: "2026-05-01T11:00:01Z", now: "2026-05-01T10:00:00Z",
			wantNominal: "2026-05-01T11:00:11Z"},
		{name: "every below the minimum is clamped", every: 0, now: "2026-05-01T10:00:02Z",
			wantNominal: "2026-05-01T10:00:02Z", wantDue: true},
		{name: "times in other zones give the same UTC nominal", every: time.Hour,
			lastStart: "2026-05-01T05:00:00-04:00", lastFin: "2026-05-01T11:10:00+02:00", now: "2026-05-01T09:10:00Z",
			wantNominal: "2026-05-01T10:10:00Z"},
	}
	opt := func(t *testing.T, s string) time.Time {
		if s == "" {
			return time.Time{}
		}
		return at(t, s)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := IntervalParams{Every: tt.every, Created: at(t, created), LastStart: opt(t, tt.lastStart), LastFinish: opt(t, tt.lastFin), Now: at(t, tt.now)}
			got := NextInterval(p)
			if !got.Nominal.Equal(opt(t, tt.wantNominal)) {
				t.Errorf("Nominal = %v, want %q", got.Nominal, tt.wantNominal)
			}
			if !got.Nominal.IsZero() && (got.Nominal.Location() != time.UTC || got.Nominal.Nanosecond() != 0) {
				t.Errorf("Nominal = %v, want UTC whole seconds", got.Nominal)
			}
			if got.Due != tt.wantDue || got.InFlight != tt.wantFlight || got.Missed != tt.wantMissed {
				t.Errorf("Due, InFlight, Missed = %v, %v, %d; want %v, %v, %d", got.Due, got.InFlight, got.Missed, tt.wantDue, tt.wantFlight, tt.wantMissed)
			}
			// A restarted scheduler reading the same records gets the same answer.
			if again := NextInterval(p); again != got {
				t.Errorf("same inputs, different answer: %+v then %+v", got, again)
			}
		})
	}
}

// TestIntervalSimulation runs an interval automation against a fake clock:
// runs take a while, the scheduler wakes every second, and the machine sleeps
// for five hours in the middle. Each run starts one interval after the
// previous one finished; the sleep produces exactly one late run, not a
// queue; a "restart" (a fresh computation from the stored records) changes
// nothing; nominal times strictly increase, so fire ids never collide.
func TestIntervalSimulation(t *testing.T) {
	t.Parallel()
	const every = 10 * time.Minute
	const runTime = 95 * time.Second
	created := at(t, "2026-05-01T10:00:00Z")
	sleepFrom, sleepTo := at(t, "2026-05-01T11:00:30Z"), at(t, "2026-05-01T16:00:30Z")

	type record struct{ lastStart, lastFinish time.Time }
	var rec record
	var starts, nominals []time.Time
	running := false
	var finishAt time.Time

	for now := created; now.Before(at(t, "2026-05-01T17:00:00Z")); now = now.Add(time.Second) {
		if !now.Before(sleepFrom) && now.Before(sleepTo) {
			now = sleepTo // the laptop was closed; nothing ran
		}
		if running && !now.Before(finishAt) {
			rec.lastFinish, running = finishAt, false
		}
		p := IntervalParams{Every: every, Created: created, LastStart: rec.lastStart, LastFinish: rec.lastFinish, Now: now}
		r := NextInterval(p)
		if restarted := NextInterval(p); restarted != r {
			t.Fatalf("restart changed the answer at %v: %+v vs %+v", now, r, restarted)
		}
		if running != r.InFlight {
			t.Fatalf("InFlight = %v while running = %v at %v", r.InFlight, running, now)
		}
		if !r.Due {
			continue
		}
		if n := len(nominals); n > 0 && !r.Nominal.After(nominals[n-1]) {
			t.Fatalf("nominal %v not after previous %v", r.Nominal, nominals[n-1])
		}
		nominals = append(nominals, r.Nominal)
		starts = append(starts, now)
		rec.lastStart, running, finishAt = now, true, now.Add(runTime)
	}

	late := 0
	for i := 1; i < len(starts); i++ {
		gap := starts[i].Sub(starts[i-1])
		switch {
		case gap == every+runTime:
			// measured from the previous completion
		case starts[i].Equal(sleepTo):
			late++
		default:
			t.Fatalf("run %d started %v after run %d: want %v (every after completion)", i, gap, i-1, every+runTime)
		}
	}
	if late != 1 {
		t.Fatalf("%d late runs after the sleep, want exactly 1", late)
	}
	if len(starts) < 10 {
		t.Fatalf("only %d runs", len(starts))
	}
}
