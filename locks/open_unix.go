//go:build unix

package locks

import "syscall"

// openNoFollow makes opening a lock path fail on a symlink instead of
// following it: the holder record is written into the file, and a planted
// symlink must never make us truncate some other file.
const openNoFollow = syscall.O_NOFOLLOW
