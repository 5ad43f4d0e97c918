package schedule

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// TestCronNext follows Next from a fixed instant and compares the successive
// results, formatted in the spec's zone, so offsets are asserted too. The
// transition dates were checked against Go's tzdata:
//
//	America/New_York    2026-03-08 01:59:59 EST -> 03:00 EDT; 2026-11-01 01:59:59 EDT -> 01:00 EST
//	Europe/London       2026-03-29 00:59:59 GMT -> 02:00 BST; 2026-10-25 01:59:59 BST -> 01:00 GMT
//	Australia/Lord_Howe 2026-10-04 01:59:59 +1030 -> 02:30 +11; 2026-04-05 01:59:59 +11 -> 01:30 +1030
func TestCronNext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		expr, tz string
		from     string
		want     []string
	}{
		// America/New_York.
		{"ny spring forward: 02:30 fires at the transition", "30 2 * * *", "America/New_York",
			"2026-03-07T12:00:00-05:00", []string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"ny fall back: 01:30 fires once", "30 1 * * *", "America/New_York",
			"2026-10-31T12:00:00-04:00", []string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"ny fall back from the repeated hour: first 01:30 already passed", "30 1 * * *", "America/New_York",
			"2026-11-01T01:10:00-05:00", []string{"2026-11-02T01:30:00-05:00"}},
		{"ny fall back hourly: each wall slot once", "30 * * * *", "America/New_York",
			"2026-11-01T00:00:00-04:00", []string{"2026-11-01T00:30:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T02:30:00-05:00", "2026-11-01T03:30:00-05:00"}},
		{"ny fall back minutely: silent in the repeated hour", "* * * * *", "America/New_York",
			"2026-11-01T01:58:30-04:00", []string{"2026-11-01T01:59:00-04:00", "2026-11-01T02:00:00-05:00", "2026-11-01T02:01:00-05:00"}},
		{"ny spring forward hourly", "30 * * * *", "America/New_York",
			"2026-03-08T00:00:00-05:00", []string{"2026-03-08T00:30:00-05:00", "2026-03-08T01:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00"}},
		{"ny spring forward: slots in one gap collapse", "0,30 2 * * *", "America/New_York",
			"2026-03-08T00:00:00-05:00", []string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"}},
		{"ny spring forward: gap slot and 03:00 collapse", "0 2,3 * * *", "America/New_York",
			"2026-03-08T00:00:00-05:00", []string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"}},
		{"ny spring forward minutely", "* * * * *", "America/New_York",
			"2026-03-08T01:58:00-05:00", []string{"2026-03-08T01:59:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T03:01:00-04:00"}},

		// Europe/London.
		{"london spring forward: 01:30 fires at 02:00 BST", "30 1 * * *", "Europe/London",
			"2026-03-28T12:00:00Z", []string{"2026-03-29T02:00:00+01:00", "2026-03-30T01:30:00+01:00"}},
		{"london fall back: 01:30 fires once", "30 1 * * *", "Europe/London",
			"2026-10-24T12:00:00+01:00", []string{"2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00Z"}},
		{"london spring forward: 02:30 unaffected", "30 2 * * *", "Europe/London",
			"2026-03-28T12:00:00Z", []string{"2026-03-29T02:30:00+01:00"}},

		// Australia/Lord_Howe: 30-minute shifts.
		{"lord howe spring forward: 02:15 fires at 02:30", "15 2 * * *", "Australia/Lord_Howe",
			"2026-10-03T12:00:00+10:30", []string{"2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}},
		{"lord howe spring forward: 02:45 unaffected", "45 2 * * *", "Australia/Lord_Howe",
			"2026-10-03T12:00:00+10:30", []string{"2026-10-04T02:45:00+11:00"}},
		{"lord howe fall back: 01:45 fires once", "45 1 * * *", "Australia/Lord_Howe",
			"2026-04-04T12:00:00+11:00", []string{"2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"}},
		{"lord howe spring quarter-hourly", "*/15 * * * *", "Australia/Lord_Howe",
			"2026-10-04T01:30:00+10:30", []string{"2026-10-04T01:45:00+10:30", "2026-10-04T02:30:00+11:00", "2026-10-04T02:45:00+11:00"}},
		{"lord howe fall quarter-hourly", "*/15 * * * *", "Australia/Lord_Howe",
			"2026-04-05T01:30:00+11:00", []string{"2026-04-05T01:45:00+11:00", "2026-04-05T02:00:00+10:30", "2026-04-05T02:15:00+10:30"}},

		// Midnight skipped (America/Havana 2026-03-08 00:00 CST -> 01:00 CDT).
		{"havana daily at a skipped midnight", "@daily", "America/Havana",
			"2026-03-07T12:00:00-05:00", []string{"2026-03-08T01:00:00-04:00", "2026-03-09T00:00:00-04:00"}},

		// Ordinary cases.
		{"weekdays at 03:00 in Paris", "0 3 * * 1-5", "Europe/Paris",
			"2026-06-05T10:00:00+02:00", []string{"2026-06-08T03:00:00+02:00", "2026-06-09T03:00:00+02:00"}},
		{"utc quarter-hourly", "*/15 * * * *", "UTC",
			"2026-01-01T00:07:30Z", []string{"2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z"}},
		{"strictly after: a slot equal to the argument is skipped", "*/15 * * * *", "UTC",
			"2026-01-01T00:15:00Z", []string{"2026-01-01T00:30:00Z"}},
		{"sub-second argument", "*/15 * * * *", "UTC",
			"2026-01-01T00:14:59.999Z", []string{"2026-01-01T00:15:00Z"}},
		{"argument in another zone", "0 9 * * *", "Asia/Tokyo",
			"2026-01-01T00:30:00Z", []string{"2026-01-02T09:00:00+09:00"}},
		{"day of month or day of week", "0 0 13 * 5", "UTC",
			"2026-02-01T00:00:00Z", []string{"2026-02-06T00:00:00Z", "2026-02-13T00:00:00Z", "2026-02-20T00:00:00Z"}},
		{"february 29th", "0 0 29 2 *", "UTC",
			"2026-01-01T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"month and day names", "0 12 * jan,jul sun", "UTC",
			"2026-01-01T00:00:00Z", []string{"2026-01-04T12:00:00Z", "2026-01-11T12:00:00Z"}},

		// Descriptors.
		{"@hourly", "@hourly", "UTC", "2026-01-01T10:20:00Z", []string{"2026-01-01T11:00:00Z"}},
		{"@daily", "@daily", "UTC", "2026-01-01T10:20:00Z", []string{"2026-01-02T00:00:00Z"}},
		{"@midnight", "@midnight", "UTC", "2026-01-01T10:20:00Z", []string{"2026-01-02T00:00:00Z"}},
		{"@weekly is sunday midnight", "@weekly", "UTC", "2026-01-01T10:20:00Z", []string{"2026-01-04T00:00:00Z"}},
		{"@monthly", "@monthly", "UTC", "2026-01-01T10:20:00Z", []string{"2026-02-01T00:00:00Z"}},
		{"@yearly", "@yearly", "UTC", "2026-01-01T10:20:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"@annually", "@annually", "UTC", "2026-01-01T10:20:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"@daily in new york", "@daily", "America/New_York", "2026-11-01T00:00:00-04:00", []string{"2026-11-02T00:00:00-05:00"}},

		// Zone prefixes.
		{"CRON_TZ prefix", "CRON_TZ=Asia/Tokyo 0 9 * * *", "", "2025-12-31T23:00:00Z", []string{"2026-01-01T09:00:00+09:00"}},
		{"TZ prefix", "TZ=Asia/Tokyo 0 9 * * *", "", "2025-12-31T23:00:00Z", []string{"2026-01-01T09:00:00+09:00"}},
		{"prefix agreeing with tz", "CRON_TZ=Asia/Tokyo 0 9 * * *", "Asia/Tokyo", "2025-12-31T23:00:00Z", []string{"2026-01-01T09:00:00+09:00"}},
		{"prefix with a descriptor", "CRON_TZ=Europe/London @daily", "", "2026-06-01T12:00:00Z", []string{"2026-06-02T00:00:00+01:00"}},
		{"extra spaces", "  CRON_TZ=UTC   0   9 * *   *  ", "", "2026-01-01T00:00:00Z", []string{"2026-01-01T09:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustCron(t, tt.expr, tt.tz)
			var got []string
			n := at(t, tt.from)
			for range tt.want {
				n = c.Next(n)
				got = append(got, n.Format(time.RFC3339))
				if n.Location() != c.Location() {
					t.Errorf("Next returned location %v, want %v", n.Location(), c.Location())
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("Next sequence from %s:\n got  %v\n want %v", tt.from, got, tt.want)
			}
		})
	}
}

// TestCronNextOracle checks Next against a brute-force oracle around every
// 2026 transition of zones with unusual shifts. The oracle scans instants
// minute by minute: wall-clock slots newly reached at an instant t (those
// after the highest wall clock seen before t and at or before t's) fire at
// t. That is exactly "first instant whose wall clock is at or after the
// slot", computed without Next's zone-period walk.
func TestCronNextOracle(t *testing.T) {
	t.Parallel()
	zones := []string{
		"America/New_York", "Europe/London", "Australia/Lord_Howe",
		"America/Havana",    // midnight skipped and repeated
		"America/Santiago",  // midnight skipped, 23:00 repeated
		"Antarctica/Troll",  // two-hour shift
		"Pacific/Chatham",   // +12:45 / +13:45
		"Europe/Dublin",     // negative DST in tzdata
		"Africa/Casablanca", // Ramadan shifts
		"Asia/Beirut",
	}
	specs := []string{"30 2 * * *", "30 1 * * *", "15 2 * * *", "45 1 * * *", "*/15 * * * *",
		"0 * * * *", "* 2 * * *", "@daily", "0 23 * * *", "50 2,3 * * *"}
	for _, zone := range zones {
		t.Run(zone, func(t *testing.T) {
			t.Parallel()
			loc := mustZone(t, zone)
			cur := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).In(loc)
			transitions := 0
			for {
				_, end := cur.ZoneBounds()
				if end.IsZero() || end.Year() > 2026 {
					break
				}
				transitions++
				from := end.Add(-8 * time.Hour)
				to := end.Add(8 * time.Hour)
				for _, spec := range specs {
					checkOracle(t, mustCron(t, spec, zone), from, to)
				}
				cur = end.In(loc)
			}
			if transitions == 0 {
				t.Fatalf("no 2026 transitions found in %s", zone)
			}
		})
	}
}

func checkOracle(t *testing.T, c *Cron, from, to time.Time) {
	t.Helper()
	matches := func(w time.Time) bool { return c.wall.Next(w.Add(-time.Second)).Equal(w) }

	var want []string
	maxWall := wallClock(from.In(c.loc))
	for i := from.Add(time.Minute); !i.After(to); i = i.Add(time.Minute) {
		w := wallClock(i.In(c.loc))
		fires := false
		for s := maxWall.Truncate(time.Minute).Add(time.Minute); !s.After(w); s = s.Add(time.Minute) {
			if s.After(maxWall) && matches(s) {
				fires = true
			}
		}
		if w.After(maxWall) {
			maxWall = w
		}
		if fires {
			want = append(want, i.In(c.loc).Format(time.RFC3339))
		}
	}

	var got []string
	for n := c.Next(from); !n.After(to); n = c.Next(n) {
		if n.IsZero() {
			t.Fatalf("%s: Next returned zero", c)
		}
		got = append(got, n.Format(time.RFC3339))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s from %s to %s:\n got  %v\n want %v", c, from.Format(time.RFC3339), to.Format(time.RFC3339), got, want)
	}
}

func TestParseCronErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		expr, tz string
		is       error
		contains string
	}{
		{"february 30th never fires", "0 0 30 2 *", "", ErrNeverFires, `parse cron "0 0 30 2 *": cron spec never fires`},
		{"april 31st never fires", "0 0 31 4 *", "UTC", ErrNeverFires, "never fires"},
		{"31st of short months never fires", "0 0 31 2,4,6,9,11 *", "", ErrNeverFires, "never fires"},
		{"unknown zone", "0 3 * * *", "Mars/Base", ErrUnknownZone, `unknown time zone "Mars/Base"`},
		{"unknown zone in prefix", "CRON_TZ=Mars/Base 0 3 * * *", "", ErrUnknownZone, `unknown time zone "Mars/Base"`},
		{"zone with traversal", "0 3 * * *", "../../etc/passwd", ErrUnknownZone, "unknown time zone"},
		{"zone absolute path", "TZ=/../../etc 0 3 * * *", "", ErrUnknownZone, "unknown time zone"},
		{"zone that is a directory", "0 3 * * *", "America", ErrUnknownZone, "unknown time zone"},
		{"zone too long", "0 3 * * *", strings.Repeat("A", 100), ErrUnknownZone, "unknown time zone"},
		{"prefix disagrees with tz", "CRON_TZ=Europe/Paris 0 3 * * *", "America/New_York", ErrInvalidCron, `disagrees with tz "America/New_York"`},
		{"two prefixes", "TZ=UTC CRON_TZ=UTC 0 3 * * *", "", ErrInvalidCron, "more than one zone prefix"},
		{"bare TZ=", "TZ=", "", ErrInvalidCron, "needs a zone and a schedule"},
		{"bare CRON_TZ=", "CRON_TZ=", "", ErrInvalidCron, "needs a zone and a schedule"},
		{"TZ without spec", "TZ=Europe/Paris", "", ErrInvalidCron, "needs a zone and a schedule"},
		{"empty zone in prefix", "CRON_TZ= 0 3 * * *", "", ErrInvalidCron, "needs a zone and a schedule"},
		{"empty", "", "", ErrInvalidCron, "empty"},
		{"blank", "   ", "", ErrInvalidCron, "empty"},
		{"garbage", "every day at noon", "", ErrInvalidCron, "want 5 fields"},
		{"six fields", "0 0 3 * * *", "", ErrInvalidCron, "want 5 fields"},
		{"four fields", "0 3 * *", "", ErrInvalidCron, "want 5 fields"},
		{"minute out of range", "60 * * * *", "", ErrInvalidCron, "above maximum"},
		{"day of week 7", "0 0 * * 7", "", ErrInvalidCron, "above maximum"},
		{"step zero", "*/0 * * * *", "", ErrInvalidCron, "step"},
		{"negative", "-1 * * * *", "", ErrInvalidCron, "invalid cron spec"},
		{"@every refused", "@every 1h", "", ErrInvalidCron, "use an interval trigger"},
		{"@every refused with prefix", "CRON_TZ=UTC @every 5m", "", ErrInvalidCron, "use an interval trigger"},
		{"unknown descriptor", "@fortnightly", "", ErrInvalidCron, "unrecognized descriptor"},
		{"descriptor with extra", "@daily 3", "", ErrInvalidCron, "descriptor stands alone"},
		{"tab", "0\t3 * * *", "", ErrInvalidCron, "control character U+0009"},
		{"newline", "0 3 * * *\n", "", ErrInvalidCron, "control character U+000A"},
		{"NUL", "0 3 * * *\x00", "", ErrInvalidCron, "control character U+0000"},
		{"unicode", "0 3 * * lün", "", ErrInvalidCron, "non-ASCII character U+00FC"},
		{"invalid UTF-8", "0 3 * * \xff", "", ErrInvalidCron, "invalid UTF-8"},
		{"too long", "0 3 * * *" + strings.Repeat(" ", 300), "", ErrInvalidCron, "longer than 256 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseCron(tt.expr, tt.tz)
			if err == nil {
				t.Fatalf("ParseCron(%q, %q) = %v, want error", tt.expr, tt.tz, c)
			}
			if c != nil {
				t.Errorf("ParseCron returned a Cron with an error")
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %v", err, tt.is)
			}
			if errors.Is(err, errParserPanic) {
				t.Errorf("error came from a recovered panic: %v", err)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
			if !strings.HasPrefix(err.Error(), "parse cron ") {
				t.Errorf("error %q does not start with the operation", err)
			}
		})
	}
}

func TestCronAccessors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr, tz               string
		wantString, wantSpec   string
		wantZone, wantLocation string
	}{
		{"0 3 * * 1-5", "Europe/Paris", "CRON_TZ=Europe/Paris 0 3 * * 1-5", "0 3 * * 1-5", "Europe/Paris", "Europe/Paris"},
		{"TZ=Europe/Paris   0 3 * * 1-5 ", "", "CRON_TZ=Europe/Paris 0 3 * * 1-5", "0 3 * * 1-5", "Europe/Paris", "Europe/Paris"},
		{"0 3 * * *", "", "0 3 * * *", "0 3 * * *", "", "Local"},
		{"@hourly", "UTC", "CRON_TZ=UTC @hourly", "@hourly", "UTC", "UTC"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			c := mustCron(t, tt.expr, tt.tz)
			if got := c.String(); got != tt.wantString {
				t.Errorf("String() = %q, want %q", got, tt.wantString)
			}
			if got := c.Spec(); got != tt.wantSpec {
				t.Errorf("Spec() = %q, want %q", got, tt.wantSpec)
			}
			if got := c.Zone(); got != tt.wantZone {
				t.Errorf("Zone() = %q, want %q", got, tt.wantZone)
			}
			if got := c.Location().String(); got != tt.wantLocation {
				t.Errorf("Location() = %q, want %q", got, tt.wantLocation)
			}
			if tt.wantZone == "" && c.Location() != time.Local {
				t.Errorf("no zone: Location() is not time.Local")
			}
			again := mustCron(t, c.String(), "")
			if again.String() != c.String() {
				t.Errorf("round trip: %q became %q", c.String(), again.String())
			}
			again = mustCron(t, c.Spec(), c.Zone())
			if again.String() != c.String() {
				t.Errorf("Spec+Zone round trip: %q became %q", c.String(), again.String())
			}
		})
	}
}

// TestRobfigNativeDST records what robfig/cron v3.0.1 does on its own, which
// is why Next maps wall-clock slots itself: it skips a slot in a spring-forward
// gap entirely and fires a slot in a fall-back overlap twice. If an upgrade
// changes this, re-read the wrapper.
func TestRobfigNativeDST(t *testing.T) {
	t.Parallel()
	next2 := func(spec string, from time.Time) string {
		s, err := cron.ParseStandard(spec)
		if err != nil {
			t.Fatal(err)
		}
		a := s.Next(from)
		b := s.Next(a)
		return fmt.Sprint(a.UTC().Format(time.RFC3339), " ", b.UTC().Format(time.RFC3339))
	}
	if got, want := next2("CRON_TZ=America/New_York 30 2 * * *", at(t, "2026-03-08T00:00:00-05:00")),
		"2026-03-09T06:30:00Z 2026-03-10T06:30:00Z"; got != want {
		t.Errorf("robfig spring forward: got %s, want %s (skips the day)", got, want)
	}
	if got, want := next2("CRON_TZ=America/New_York 30 1 * * *", at(t, "2026-11-01T00:00:00-04:00")),
		"2026-11-01T05:30:00Z 2026-11-01T06:30:00Z"; got != want {
		t.Errorf("robfig fall back: got %s, want %s (fires twice)", got, want)
	}
}

// TestParseCronRecovers proves the last-resort recover: a panic in the
// parser becomes an error. It swaps a package variable, so it is not
// parallel (parallel tests wait until sequential ones finish).
func TestParseCronRecovers(t *testing.T) {
	orig := parseSpec
	t.Cleanup(func() { parseSpec = orig })
	parseSpec = func(string) (cron.Schedule, error) { panic("boom") }

	c, err := ParseCron("0 3 * * *", "UTC")
	if c != nil || !errors.Is(err, errParserPanic) || !errors.Is(err, ErrInvalidCron) {
		t.Fatalf("ParseCron with a panicking parser = %v, %v; want ErrInvalidCron and errParserPanic", c, err)
	}
	if !strings.Contains(err.Error(), "boom") {
		t.Errorf("error %q does not carry the panic value", err)
	}
}
