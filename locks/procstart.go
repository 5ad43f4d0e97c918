package locks

import "strconv"

// StartTicks returns the start time of process pid in clock ticks after
// boot (/proc/<pid>/stat): with the pid, it tells a process from a later
// one that reused its pid. The error wraps fs.ErrNotExist when no process
// has that pid; elsewhere than Linux it always fails.
func StartTicks(pid int) (uint64, error) { return readStartTicks(strconv.Itoa(pid)) }

// BootID is the kernel's id of the current boot ("" where there is none):
// what a process recorded in an earlier boot may have been lost in a
// crash of the machine, unless it was synced.
func BootID() string { return self().bootID }
