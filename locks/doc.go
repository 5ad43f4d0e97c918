// Package locks gives Cairn processes exclusive ownership of named things
// (the scheduler, a worker, a run, an edit, a schedule) through lock files.
//
// The kernel lock is the truth: each name is a permanent file <dir>/<name>,
// locked with flock(2) through github.com/gofrs/flock. A process that dies
// releases its locks the instant it dies, so there is nothing to break, no
// grace period and no race around deleting lock files: they are never
// deleted.
//
// After taking the lock, the holder writes a small JSON record into the file
// (pid, process start time, boot id, host, since) so that people can be told
// who holds it ("held by pid 1234 since ..."). The record is for people only;
// whether a name is held is always decided by trying the lock (see Describe).
// Unlock clears the record before releasing, so a record in a file whose lock
// is free is never shown as a holder.
//
// flock locks belong to an open file description, so two Locks of one name in
// the same process exclude each other just as two processes do. Lock
// descriptors are opened close-on-exec and are never inherited by child
// processes.
//
// Things too numerous to have a lock file each (runs: thousands a minute,
// each locked for a moment) use a Table instead: one permanent file whose
// bytes are the locks, one per key, taken with byte-range locks of the
// open file description (fcntl F_OFD_SETLK on Linux). They are the
// kernel's too, released when their process dies, and a table never grows
// the directory: locking and unlocking a key is one system call.
//
// Lock names are validated with ids.Validate before any path is built, and
// every lock lives inside the directory it is given: there is no API to lock
// an arbitrary path (and the SQLite database must never be locked with
// flock). Lock files are created 0600 and the directory 0700. A symlink at a
// lock path is refused, never followed.
package locks
