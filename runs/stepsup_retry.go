package runs

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/cairnhq/cairn/store"
)

// A step that ends while the state disk is full (or failing) cannot have
// its result recorded: the step file's write fails, and so does the
// store's in leases mode. Giving up would leave a call whose outcome is
// unknown, and its run would wait for a person to say whether to run the
// step again. So the supervisor, which holds the step's lock meanwhile
// and so keeps adopters waiting for it, tries again with backoff until
// the disk allows, up to resultRetryFor, and says so on its status pipe
// (statusWaiting), which the engine logs.

// statusWaiting prefixes a status line saying the supervisor waits for
// the disk to record the result.
const statusWaiting = "waiting: "

// resultRetryFor bounds how long a supervisor keeps trying to record a
// result on a full or failing disk.
const resultRetryFor = 10 * time.Minute

// recordResult confirms the step's lock and records st, trying again
// while the failure is a disk fault.
func recordResult(status io.Writer, lock stepLock, rec *stepRecorder, st *stepState) error {
	wait := 100 * time.Millisecond
	deadline := time.Now().Add(resultRetryFor)
	said := false
	for {
		err := lock.confirm()
		if err == nil {
			err = rec.write(st, true)
		}
		if err == nil || !diskFault(err) || time.Now().After(deadline) {
			return err
		}
		if !said {
			fmt.Fprintf(status, "%sthe step ended; its result cannot be recorded yet (%v): retrying until the disk allows\n", statusWaiting, err)
			said = true
		}
		time.Sleep(wait) // a backoff between trial writes, not a synchronisation
		wait = min(2*wait, 2*time.Second)
	}
}

// diskFault reports a full or failing disk: the file system's error, or a
// store paused by one (not one whose database vanished).
func diskFault(err error) bool {
	var u *store.UnavailableError
	if errors.As(err, &u) {
		return u.Reason == store.ReasonDiskFull || u.Reason == store.ReasonDiskError
	}
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EIO)
}
