package store

import (
	"errors"
	"fmt"
	"time"
)

// Health says whether a store writes now. A persistent store pauses
// writing after a disk fault (a full or failing disk) and resumes by
// itself; it stops for good when its database vanished or was replaced.
type Health struct {
	// Err is why writes are refused now (an *UnavailableError); nil: the
	// store writes.
	Err error
	// Fatal: the store will never write again; the process should end
	// its serving loops with Err.
	Fatal bool
	// Since is when the current state began.
	Since time.Time
}

// HealthWatcher is implemented by stores whose writes can pause. Both
// methods are safe for concurrent use.
type HealthWatcher interface {
	// Health returns the current state.
	Health() Health
	// HealthChanged returns a channel closed at the next change of
	// Health (a nil channel, which never fires, for a store that cannot
	// change).
	HealthChanged() <-chan struct{}
}

// Reasons an *UnavailableError gives.
const (
	ReasonDiskFull  = "disk full"
	ReasonDiskError = "disk error"
	ReasonVanished  = "vanished"
)

// UnavailableError refuses a write while the store cannot write. It wraps
// ErrStopped.
type UnavailableError struct {
	Folder string // the state folder
	Reason string // ReasonDiskFull, ReasonDiskError or ReasonVanished
	Err    error  // the fault, when known
}

func (e *UnavailableError) Error() string {
	switch e.Reason {
	case ReasonDiskFull:
		return fmt.Sprintf("state disk full: free space on %s; Cairn resumes by itself", e.Folder)
	case ReasonVanished:
		return fmt.Sprintf("state folder %s: the database vanished or was replaced (%v); writes stopped: restart mcp-host", e.Folder, e.Err)
	}
	return fmt.Sprintf("state disk error on %s (%v); Cairn retries by itself", e.Folder, e.Err)
}

func (e *UnavailableError) Unwrap() []error { return []error{ErrStopped, e.Err} }

// IsUnavailable reports whether err is a refusal by a store that cannot
// write now.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}
