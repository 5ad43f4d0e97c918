//go:build !linux

package runs

import (
	"os"
	"syscall"
)

// groupAttr puts a step's command in its own process group. There is no
// parent-death signal here: an adopter kills what is left of a group
// whose supervisor died (stopGroupOf) before it runs the step again.
func groupAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// supervisorExe is the binary a step supervisor runs: this one.
func supervisorExe() (string, error) { return os.Executable() }

func zombie(int) bool { return false }

func groupHasMembers(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

func signalExact(r procRef, sig syscall.Signal) error { return syscall.Kill(r.PID, sig) }
