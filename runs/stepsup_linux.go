//go:build linux

package runs

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cairnhq/cairn/locks"
)

// groupAttr puts a step's command in its own process group; with
// dieWithParent (under a supervisor) it gets SIGKILL when the supervisor
// dies (the supervisor keeps the thread that started it: see
// superviseMain).
func groupAttr(dieWithParent bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if dieWithParent {
		a.Pdeathsig = syscall.SIGKILL
	}
	return a
}

// supervisorExe is the binary a step supervisor runs: this process's own
// image, even when its file was replaced or removed since it started (an
// upgrade), so owner and supervisor always agree.
func supervisorExe() (string, error) { return "/proc/self/exe", nil }

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	st, ok := procStat(strconv.Itoa(pid))
	return ok && st.state == 'Z'
}

type statFields struct {
	state byte
	pgrp  int
}

// procStat reads the state and process group of /proc/<pid>/stat.
func procStat(pid string) (statFields, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return statFields{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return statFields{}, false
	}
	f := strings.Fields(string(b[i+1:])) // state, ppid, pgrp, ...
	if len(f) < 3 || len(f[0]) != 1 {
		return statFields{}, false
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return statFields{}, false
	}
	return statFields{state: f[0][0], pgrp: pgrp}, true
}

// groupHasMembers reports whether a process that is not a zombie belongs
// to process group pgid.
func groupHasMembers(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); err != nil {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: the group answered
	}
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		if st, ok := procStat(e.Name()); ok && st.pgrp == pgid && st.state != 'Z' {
			return true
		}
	}
	return false
}

// signalExact signals the process r names through a pidfd, after
// checking, with the pidfd open, that the pid still names the process
// that started at r.Start: a pid reused in between cannot be hit.
func signalExact(r procRef, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(r.PID, 0)
	if err != nil {
		return syscall.Kill(r.PID, sig) // no pidfd (old kernel): isAlive checked it
	}
	defer unix.Close(fd)
	if start, err := locks.StartTicks(r.PID); err != nil || (r.Start != 0 && start != r.Start) {
		return fmt.Errorf("signal pid %d: it is another process now", r.PID)
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0)
}
