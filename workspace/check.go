package workspace

import (
	"fmt"
	"os"
	"syscall"
)

// UnsafeDirError refuses a state folder that someone else could tamper with.
type UnsafeDirError struct {
	Path   string
	Reason string
	Fix    string
}

func (e *UnsafeDirError) Error() string {
	return fmt.Sprintf("state folder %s %s; %s", e.Path, e.Reason, e.Fix)
}

// Magic numbers of network file systems, on which SQLite's WAL and flock
// cannot be trusted (statfs(2)).
var networkFS = map[int64]string{
	0x6969:     "NFS",
	0x517B:     "SMB",
	0xFF534D42: "CIFS",
	0xFE534D42: "SMB2",
	0x01021997: "9P",
	0x00C36400: "Ceph",
	0x0BD00BD0: "Lustre",
	0x5346414F: "AFS",
	0x6B414653: "AFS",
}

// CheckDir refuses a folder that is a symlink, is not owned by the current
// user, is writable by group or others, or lives on a network file system.
func CheckDir(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("check state folder %s: %w", path, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		if fi, err = os.Stat(path); err != nil {
			return fmt.Errorf("check state folder %s: %w", path, err)
		}
	}
	if !fi.IsDir() {
		return &UnsafeDirError{Path: path, Reason: "is not a folder", Fix: "move it aside or choose another --state"}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return &UnsafeDirError{Path: path, Reason: fmt.Sprintf("is owned by uid %d, not by you (uid %d)", st.Uid, os.Getuid()),
			Fix: "use a state folder of your own (--state DIR or CAIRN_STATE)"}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return &UnsafeDirError{Path: path, Reason: fmt.Sprintf("is writable by group or others (mode %04o)", perm),
			Fix: fmt.Sprintf("run: chmod 700 %s", path)}
	}
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(path, &sfs); err == nil {
		if name, ok := networkFS[int64(sfs.Type)]; ok {
			return &UnsafeDirError{Path: path, Reason: "is on a network file system (" + name + ")",
				Fix: "SQLite's WAL and file locks need a local disk: choose a local --state folder"}
		}
	}
	return nil
}
