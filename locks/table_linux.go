package locks

import "golang.org/x/sys/unix"

// Tables use open file description (OFD) locks: owned by the open file,
// not by the process, so closing some other descriptor of the file never
// drops them, and they are released when the last descriptor of the open
// file closes, at the latest when the process dies.
const (
	cmdSetLock = unix.F_OFD_SETLK
	cmdGetLock = unix.F_OFD_GETLK
)
