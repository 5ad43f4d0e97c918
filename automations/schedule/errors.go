package schedule

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Errors returned by this package, for errors.Is. Each returned error wraps
// exactly one of them and adds what went wrong.
var (
	// ErrInvalidCron: the cron expression cannot be parsed.
	ErrInvalidCron = errors.New("invalid cron spec")
	// ErrUnknownZone: the time zone is not a known IANA name.
	ErrUnknownZone = errors.New("unknown time zone")
	// ErrNeverFires: the spec parses but matches no date (0 0 30 2 *).
	ErrNeverFires = errors.New("cron spec never fires")
	// ErrInvalidInterval: the interval is not a duration within bounds.
	ErrInvalidInterval = errors.New("invalid interval")
	// ErrInvalidPolicy: the missed-run policy is not skip or once.
	ErrInvalidPolicy = errors.New("invalid missed-run policy")
)

// errParserPanic marks a panic recovered inside ParseCron. Validation is
// meant to make it unreachable; the fuzz test fails if it ever shows up.
var errParserPanic = errors.New("cron parser panicked")

// quoteShort quotes s for an error message, cutting it if it is long.
func quoteShort(s string) string {
	const max = 64
	if len(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q…", s[:cut])
}

// checkText refuses input that is too long or not printable ASCII.
func checkText(s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("longer than %d bytes", max)
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return fmt.Errorf("invalid UTF-8 at byte %d", i)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return fmt.Errorf("control character %U at byte %d", r, i)
		case r >= 0x80:
			return fmt.Errorf("non-ASCII character %U at byte %d", r, i)
		}
		i += size
	}
	return nil
}
