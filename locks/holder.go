package locks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// ErrHeld is matched (errors.Is) by the error of TryLock and Acquire when
// another Lock, in this process or another, holds the name. The error is a
// *HeldError that says who.
var ErrHeld = errors.New("lock is held")

// HeldError says that a lock is held and by whom.
type HeldError struct {
	Name   string
	Holder Holder // zero when the holder did not (yet) say who it is
}

// Error reads "scheduler is held by pid 1234 (since 2026-11-29T19:00:00Z)".
func (e *HeldError) Error() string {
	h := e.Holder
	switch {
	case h.PID == 0:
		return e.Name + " is held by another process"
	case h.Since.IsZero():
		return fmt.Sprintf("%s is held by pid %d", e.Name, h.PID)
	}
	return fmt.Sprintf("%s is held by pid %d (since %s)", e.Name, h.PID, h.Since.UTC().Format(time.RFC3339))
}

// Unwrap makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Unwrap() error { return ErrHeld }

// Holder is what the holder of a lock wrote about itself. It is for people:
// whether a lock is held is decided by the kernel lock, never by this record.
// Fields the holder could not know (no /proc) are zero.
type Holder struct {
	PID       int
	StartTime time.Time // when the holding process started
	BootID    string    // the kernel's boot id when it took the lock
	Host      string
	Since     time.Time // when it took the lock
}

// String reads "pid 1234 since 2026-11-29T19:00:00Z".
func (h Holder) String() string {
	switch {
	case h.PID == 0:
		return "unknown process"
	case h.Since.IsZero():
		return fmt.Sprintf("pid %d", h.PID)
	}
	return fmt.Sprintf("pid %d since %s", h.PID, h.Since.UTC().Format(time.RFC3339))
}

// record is the JSON a holder writes into its lock file.
type record struct {
	PID        int       `json:"pid"`
	StartTime  time.Time `json:"start_time,omitzero"`
	StartTicks uint64    `json:"start_ticks,omitempty"` // exact, for telling a reused pid apart
	BootID     string    `json:"boot_id,omitempty"`
	Host       string    `json:"host,omitempty"`
	Since      time.Time `json:"since"`
}

func newRecord(now time.Time) record {
	me := self()
	return record{
		PID:        me.pid,
		StartTime:  me.startTime,
		StartTicks: me.startTicks,
		BootID:     me.bootID,
		Host:       me.host,
		Since:      now.UTC().Truncate(time.Second),
	}
}

func (r record) holder() Holder {
	return Holder{PID: r.PID, StartTime: r.StartTime, BootID: r.BootID, Host: r.Host, Since: r.Since}
}

// maxRecord bounds how much of a lock file is read.
const maxRecord = 4 << 10

// readRecord reads the record in the lock file at path. ok is false when
// the file holds no complete record (free, or its holder is between taking
// the lock and writing).
func readRecord(path string) (r record, ok bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNoFollow, 0)
	if err != nil {
		return record{}, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecord))
	if err != nil || len(b) == 0 {
		return record{}, false
	}
	if err := json.Unmarshal(b, &r); err != nil || r.PID <= 0 {
		return record{}, false
	}
	return r, true
}

// recordRetries bounds how often readHolder looks again for a record that
// is missing or left by a dead process (about 36 ms in all).
const recordRetries = 8

// readHolder returns who holds the (held) lock at path. A holder writes its
// record right after locking, and until then the file is empty or still
// shows a previous holder that died; readHolder waits a moment for the
// record and never names a process that has provably ended. It returns the
// zero Holder when it cannot tell.
func readHolder(path string) Holder {
	for i := 0; ; i++ {
		if r, ok := readRecord(path); ok && !r.gone() {
			return r.holder()
		}
		if i == recordRetries {
			return Holder{}
		}
		<-wall.NewTimer(time.Duration(i+1) * time.Millisecond).C()
	}
}
