package automations

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

var (
	// ErrConflict is wrapped by *ConflictError.
	ErrConflict = errors.New("automation exists with a different spec")
	// ErrConfigOwned is wrapped when a change is refused because the
	// automation comes from a workflow file.
	ErrConfigOwned = errors.New("automation comes from a workflow file")
	// ErrAmbiguous is wrapped when a key names automations of several owners.
	ErrAmbiguous = errors.New("ambiguous automation key")
)

// ConflictError refuses a create whose owner and key exist with another
// spec. It wraps ErrConflict and store.ErrExists.
type ConflictError struct {
	Existing    *store.Automation
	Differences []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("automation %q already exists (%s) with a different spec: %s; update it, delete it first, or choose another key",
		e.Existing.Key, e.Existing.ID, strings.Join(e.Differences, "; "))
}

func (e *ConflictError) Unwrap() []error { return []error{ErrConflict, store.ErrExists} }

// EditLockedError says another process is changing the automation now.
type EditLockedError struct {
	Key  string
	Held *locks.HeldError
}

func (e *EditLockedError) Error() string {
	return fmt.Sprintf("automation %s is being changed by %s; retry", e.Key, e.Held.Holder)
}

func (e *EditLockedError) Unwrap() error { return e.Held }

// PausedError refuses to fire a paused automation; it wraps
// store.ErrPaused.
type PausedError struct{ Key, Note string }

func (e *PausedError) Error() string {
	note := ""
	if e.Note != "" {
		note = " (" + e.Note + ")"
	}
	return fmt.Sprintf("automation %s is paused%s; resume it first", e.Key, note)
}

func (e *PausedError) Unwrap() error { return store.ErrPaused }
