//go:build unix && !linux

package locks

import "golang.org/x/sys/unix"

// Without OFD locks, tables use classic POSIX record locks. They belong
// to the process, and closing any descriptor of the file drops all of
// them: the process keeps one descriptor per table path (see tableFile)
// and nothing else may open a table's file.
const (
	cmdSetLock = unix.F_SETLK
	cmdGetLock = unix.F_GETLK
)
