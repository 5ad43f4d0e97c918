// Package store defines how Cairn's durable state is read and written,
// independent of the database behind it.
//
// Interfaces are split by consumer (RunStore, AutomationStore,
// SessionStore) and gathered in Store. Backends live in sub-packages:
// store/sqlite, the default, and store/memory for dry runs and tests. Both
// pass the same conformance suite, store/storetest.
//
// Every write is one operation with an id (see WithOpID). Its outcome is
// NotCommitted, Committed or Unknown: a write that returns an error wrapping
// a *CommitError with Outcome Unknown may or may not be durable; the store
// pauses writing (an *UnavailableError, see Health), resolves the outcome
// from what is on disk and resumes when it can; Outcome(opID) answers
// from then on. Callers never retry blindly.
//
// Mutable records carry a revision; a write that names a stale expected
// revision is refused with a *StaleError.
//
// Rules are written once, outside the backends: the run state machine is
// the pure Apply* functions of this package (transition.go), and the
// automations' fire policy is package automations/policy. A backend reads,
// calls them and persists what they return. Writes take their time from
// their params (Now, CreatedAt); a zero time means the current time (At).
//
// All methods are safe for concurrent use, from many goroutines and, for
// persistent backends, from many processes. A lookup of a missing record
// returns an error wrapping ErrNotFound.
package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/internal/ids"
)

// Store is the whole of Cairn's durable state for one workspace.
type Store interface {
	RunStore
	AutomationStore
	SessionStore
	LeaseStore
	OutboxStore
	AuditStore

	// Outcome reports whether the write operation opID was committed. For
	// an operation that is not in flight it is Committed or NotCommitted.
	Outcome(ctx context.Context, opID string) (Outcome, error)
	// Counts returns how many runs, automations and sessions are stored.
	Counts(ctx context.Context) (Counts, error)
	// Close releases the store. Writes in flight finish first.
	Close() error
}

// Counts summarises a store for `mcp-host status`.
type Counts struct {
	Runs        int `json:"runs"`
	Automations int `json:"automations"`
	Sessions    int `json:"sessions"`
}

// Outcome is what became of a write operation.
type Outcome int

const (
	// NotCommitted: the previous state is still authoritative.
	NotCommitted Outcome = iota
	// Committed: the write is durable.
	Committed
	// Unknown: the commit was attempted and its result is not known; the
	// store pauses writing until it has looked the outcome up.
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case NotCommitted:
		return "not committed"
	case Committed:
		return "committed"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

var (
	// ErrNotFound is wrapped by every lookup of a missing record.
	ErrNotFound = errors.New("not found")
	// ErrExists is wrapped when a create names an id or key already taken
	// by a different record.
	ErrExists = errors.New("already exists")
	// ErrStale is wrapped by *StaleError.
	ErrStale = errors.New("stale revision")
	// ErrStopped is wrapped by every refusal of a store that cannot write
	// now (*UnavailableError).
	ErrStopped = errors.New("store is not writing")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("store is closed")
)

// StaleError refuses a write whose expected revision is not the record's
// current one: someone else changed it first.
type StaleError struct {
	Kind     string // "run", "automation", "session"
	ID       string
	Expected int64
	Actual   int64
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("%s %s changed since it was read (revision %d, expected %d); read it again and retry", e.Kind, e.ID, e.Actual, e.Expected)
}

func (e *StaleError) Unwrap() error { return ErrStale }

// NotFoundError names the missing record; it wraps ErrNotFound.
type NotFoundError struct {
	Kind string
	ID   string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("no %s %q", e.Kind, e.ID) }

func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// CommitError reports a write whose commit did not plainly succeed.
type CommitError struct {
	OpID    string
	Outcome Outcome
	Err     error
}

func (e *CommitError) Error() string {
	return fmt.Sprintf("commit operation %s (outcome %s): %v", e.OpID, e.Outcome, e.Err)
}

func (e *CommitError) Unwrap() error { return e.Err }

type opKey struct{}

// WithOpID attaches the id of the next write operation to ctx, so that the
// caller can later ask Outcome(id). Writes without one get a fresh id.
func WithOpID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, opKey{}, id)
}

// OpID returns the operation id attached to ctx, or a new one.
func OpID(ctx context.Context) string {
	if id, ok := ctx.Value(opKey{}).(string); ok && id != "" {
		return id
	}
	return ids.New("op")
}
