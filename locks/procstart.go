package locks

import "strconv"

// StartTicks returns the start time of process pid in clock ticks after
// boot (/proc/<pid>/stat): with the pid, it tells a process from a later
// one that reused its pid. The error wraps fs.ErrNotExist when no process
// has that pid; elsewhere than Linux it always fails.
func StartTicks(pid int) (uint64, error) { return readStartTicks(strconv.Itoa(pid)) }
