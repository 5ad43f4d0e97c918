package sessions

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every refusal of bad input (*InvalidError,
// *LimitError). Invalid ids are *ids.InvalidError.
var ErrInvalid = errors.New("invalid input")

// InvalidError refuses a request and says why.
type InvalidError struct {
	What   string // "message 2", "summary", "cursor"
	Reason string
}

func (e *InvalidError) Error() string { return e.What + ": " + e.Reason }

func (e *InvalidError) Unwrap() error { return ErrInvalid }

func invalidf(what, format string, args ...any) error {
	return &InvalidError{What: what, Reason: fmt.Sprintf(format, args...)}
}

// LimitError refuses input over a size limit and names the limit.
type LimitError struct {
	What  string // "message 0", "append"
	Size  int
	Limit int
	Per   string // "per message", "per append"
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s is %s; the limit is %s %s", e.What, sizeString(e.Size), sizeString(e.Limit), e.Per)
}

func (e *LimitError) Unwrap() error { return ErrInvalid }

// sizeString reads "1 MiB (1048576 bytes)" or "10.0 MiB (10485760 bytes)".
func sizeString(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB (%d bytes)", n>>20, n)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB (%d bytes)", n>>10, n)
	}
	return fmt.Sprintf("%d bytes", n)
}
