package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MaxCronLen is the longest cron expression accepted, zone prefix included.
const MaxCronLen = 256

// maxZoneLen bounds a zone name; the longest IANA name is about 30 bytes.
const maxZoneLen = 64

// maxWallSteps bounds the slots Next skips because they resolve to instants
// not after its argument; that only happens inside a repeated interval, at
// most a day of one-minute slots in any tzdata history.
const maxWallSteps = 1 << 16

// neverFiresProbe is where the never-fires check starts: robfig's five-year
// search from here covers every month length and a February 29th (2024).
var neverFiresProbe = time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)

// parser reads the standard five fields and the descriptors. The zone prefix
// is handled before it is called: robfig's own handling panics on some input.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseSpec is parser.Parse; a test replaces it to exercise the recover.
var parseSpec = parser.Parse

// Cron is a parsed cron spec in a time zone. It is immutable and safe for
// concurrent use. Create one with ParseCron; the zero Cron is not usable.
type Cron struct {
	spec string         // normalized spec, without a zone prefix
	zone string         // zone name as given; "" for the machine's zone
	loc  *time.Location // the zone
	// wall is the spec evaluated on wall clocks: its Location is UTC, which
	// has no transitions, so robfig's Next is exact there. Next maps each
	// wall-clock slot to an instant in loc.
	wall *cron.SpecSchedule
}

// ParseCron parses a cron expression for the zone tz (an IANA name; "" means
// the machine's zone unless expr carries a CRON_TZ= or TZ= prefix). See the
// package documentation for the syntax and the errors. It never panics.
func ParseCron(expr, tz string) (c *Cron, err error) {
	defer func() {
		if r := recover(); r != nil {
			c = nil
			err = fmt.Errorf("parse cron %s: %w: %w: %v", quoteShort(expr), ErrInvalidCron, errParserPanic, r)
		}
	}()
	c, err = parseCron(expr, tz)
	if err != nil {
		return nil, fmt.Errorf("parse cron %s: %w", quoteShort(expr), err)
	}
	return c, nil
}

func parseCron(expr, tz string) (*Cron, error) {
	if err := checkText(expr, MaxCronLen); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidCron, err)
	}
	s := strings.Trim(expr, " ")
	if s == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalidCron)
	}

	zone := tz
	if prefix, name, rest, ok := cutZonePrefix(s); ok {
		if name == "" || rest == "" {
			return nil, fmt.Errorf("%w: %s needs a zone and a schedule, as in %q", ErrInvalidCron, prefix, prefix+"Europe/Paris 0 3 * * *")
		}
		if _, _, _, again := cutZonePrefix(rest); again {
			return nil, fmt.Errorf("%w: more than one zone prefix", ErrInvalidCron)
		}
		if tz != "" && tz != name {
			return nil, fmt.Errorf("%w: zone %s%s disagrees with tz %s", ErrInvalidCron, prefix, name, quoteShort(tz))
		}
		zone, s = name, rest
	}
	loc, err := loadZone(zone)
	if err != nil {
		return nil, err
	}

	fields := strings.Fields(s)
	if strings.HasPrefix(s, "@") {
		if strings.HasPrefix(s, "@every") {
			return nil, fmt.Errorf("%w: @every is not a cron schedule; use an interval trigger (every: 1h)", ErrInvalidCron)
		}
		if len(fields) != 1 {
			return nil, fmt.Errorf("%w: a descriptor stands alone, got %q", ErrInvalidCron, s)
		}
	} else if len(fields) != 5 {
		return nil, fmt.Errorf("%w: want 5 fields (minute hour day-of-month month day-of-week) or a descriptor such as @daily, got %d", ErrInvalidCron, len(fields))
	}
	spec := strings.Join(fields, " ")

	sched, err := parseSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidCron, err)
	}
	ss, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%w: unsupported schedule %T", ErrInvalidCron, sched)
	}
	wall := *ss
	wall.Location = time.UTC
	if wall.Next(neverFiresProbe).IsZero() {
		return nil, fmt.Errorf("%w: no date matches its day-of-month and month fields", ErrNeverFires)
	}
	return &Cron{spec: spec, zone: zone, loc: loc, wall: &wall}, nil
}

// cutZonePrefix splits "CRON_TZ=Zone rest" or "TZ=Zone rest".
func cutZonePrefix(s string) (prefix, name, rest string, ok bool) {
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if after, found := strings.CutPrefix(s, p); found {
			name, rest, _ = strings.Cut(after, " ")
			return p, name, strings.Trim(rest, " "), true
		}
	}
	return "", "", "", false
}

// loadZone loads an IANA zone; "" is the machine's zone. Names are checked
// before they reach the file system: letters, digits and "/_+-" only.
func loadZone(name string) (*time.Location, error) {
	if name == "" {
		return time.Local, nil
	}
	if !validZoneName(name) {
		return nil, fmt.Errorf("%w %s", ErrUnknownZone, quoteShort(name))
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownZone, name)
	}
	return loc, nil
}

func validZoneName(name string) bool {
	if len(name) > maxZoneLen || name[0] == '/' || name[len(name)-1] == '/' || strings.Contains(name, "//") {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case b == '/', b == '_', b == '+', b == '-':
		default:
			return false
		}
	}
	return true
}

// String returns the spec with its zone as a prefix when one was given
// ("CRON_TZ=Europe/Paris 0 3 * * 1-5"); ParseCron(c.String(), "") gives an
// equal Cron.
func (c *Cron) String() string {
	if c.zone == "" {
		return c.spec
	}
	return "CRON_TZ=" + c.zone + " " + c.spec
}

// Spec returns the normalized spec without its zone: fields separated by
// single spaces.
func (c *Cron) Spec() string { return c.spec }

// Zone returns the zone name as given, or "" for the machine's zone.
func (c *Cron) Zone() string { return c.zone }

// Location returns the zone the spec is evaluated in.
func (c *Cron) Location() *time.Location { return c.loc }

// Next returns the first instant strictly after after at which the spec
// fires, in the spec's zone, following the daylight-saving rules in the
// package documentation. It returns the zero time if there is none within
// five years.
func (c *Cron) Next(after time.Time) time.Time {
	w := wallClock(after.In(c.loc))
	for range maxWallSteps {
		w = c.wall.Next(w)
		if w.IsZero() {
			return time.Time{}
		}
		// Instants are non-decreasing in wall-clock slots, so the first slot
		// resolving after the argument is the answer. Slots resolving at or
		// before it are first occurrences of a repeated interval that has
		// already passed (after is in the second occurrence), or gap slots
		// that collapsed into a transition instant already returned.
		if t := resolve(w, c.loc); t.After(after) {
			return t
		}
	}
	return time.Time{}
}

// wallClock returns t's wall clock as a UTC time with the same fields.
func wallClock(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, t.Nanosecond(), time.UTC)
}

// resolve maps a wall-clock time w (fields in UTC) to an instant in loc: the
// first instant whose wall clock is w, or, when w falls in a gap, the
// transition that ends the gap. Equivalently: the first instant whose wall
// clock is at or after w.
//
// It walks loc's zone periods from a day before w: each period [start, end)
// with offset off shows wall clocks [start+off, end+off). The first period
// showing w gives the first occurrence; reaching a period that starts past
// w means w was skipped, and that period's start is the transition.
func resolve(w time.Time, loc *time.Location) time.Time {
	const margin = 27 * time.Hour // more than any UTC offset
	limit := w.Add(margin)
	t := w.Add(-margin).In(loc)
	for {
		_, off := t.Zone()
		start, end := t.ZoneBounds()
		cand := w.Add(-time.Duration(off) * time.Second)
		if !start.IsZero() && cand.Before(start) {
			return start.In(loc)
		}
		if end.IsZero() || cand.Before(end) {
			return cand.In(loc)
		}
		if end.After(limit) {
			// Unreachable with real zone data; fall back to Go's choice.
			return time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc)
		}
		t = end.In(loc)
	}
}
