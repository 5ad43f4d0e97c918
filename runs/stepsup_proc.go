package runs

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/cairnhq/cairn/locks"
)

// refOf returns pid with its start time (0 when it cannot be read).
func refOf(pid int) procRef {
	start, _ := locks.StartTicks(pid)
	return procRef{PID: pid, Start: start}
}

// isAlive reports whether the process r names still runs: its pid is
// taken by a process that started when r did (a zombie counts as gone).
// Without a start time to compare, a taken pid counts as alive.
func (r procRef) isAlive() bool {
	if r.PID <= 0 {
		return false
	}
	start, err := locks.StartTicks(r.PID)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false
	case err != nil || r.Start == 0:
		return syscall.Kill(r.PID, 0) == nil && !zombie(r.PID)
	}
	return start == r.Start && !zombie(r.PID)
}

// groupLives reports whether the process group led by the command r
// names still has a live member. While a group has members its id is not
// given to a new process, so: a leader with another start time means the
// group is gone (its id was free again); no leader means its members are
// looked for.
func (r procRef) groupLives() bool {
	if r.PID <= 0 {
		return false
	}
	start, err := locks.StartTicks(r.PID)
	if err == nil && r.Start != 0 && start != r.Start {
		return false
	}
	if err == nil && !zombie(r.PID) {
		return true
	}
	return groupHasMembers(r.PID)
}

// stopGroupOf kills what is left of the process group of command r (an
// attempt whose supervisor is gone) and waits until it is gone, or
// fails after wait.
func stopGroupOf(r procRef, wait time.Duration) error {
	if !r.groupLives() {
		return nil
	}
	_ = syscall.Kill(-r.PID, syscall.SIGKILL)
	deadline := time.Now().Add(wait)
	for delay := time.Millisecond; r.groupLives(); delay = min(2*delay, 50*time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("process group %d of an earlier attempt is still there %s after SIGKILL", r.PID, wait)
		}
		_ = syscall.Kill(-r.PID, syscall.SIGKILL)
		time.Sleep(delay) // another process's group: nothing to wait on but time
	}
	return nil
}

// signalProcess sends sig to the process r names if it is still that
// process (see signalExact).
func signalProcess(r procRef, sig syscall.Signal) error {
	if !r.isAlive() {
		return fs.ErrNotExist
	}
	return signalExact(r, sig)
}
