//go:build unix

package locks

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cairnhq/cairn/internal/ids"
)

// Table is one lock file holding a lock per key, for things too numerous
// to have a lock file each (runs): key k is the one-byte range of the file
// at an offset derived from k, locked with a byte-range lock (open file
// description locks on Linux; see table_linux.go). The file stays empty
// and permanent, so a table costs one file however many keys come and go,
// and taking or releasing a key is one fcntl(2) call.
//
// As with a flock lock file, the kernel lock is the truth: a key is
// released the instant its holding process dies, and nothing is left to
// clean up. There is no holder record: who holds a key is kept elsewhere
// by whoever needs it (a run's owner pid is in the store).
//
// Within a process, every Table of one path shares one open file, and the
// keys it holds are excluded by the process's own bookkeeping: two Tables
// of a path in one process exclude each other just as two processes do.
// After taking a key, TryLock checks that the path still names the file
// it locked (like TryLock of a lock file); when the file was replaced, it
// locks the new one instead.
//
// Two keys map to the same offset with a probability of about n²/2⁶³ for
// n keys in use at once; they then exclude each other, which can delay one
// of them but never lets two holders in.
//
// A Table is safe for concurrent use.
type Table struct {
	name string
	path string

	mu sync.Mutex
	tf *tableFile // nil once closed
}

// tableFile is the process's open file of one table path.
type tableFile struct {
	path string
	fi   fs.FileInfo // of the open file

	mu      sync.Mutex
	f       *os.File // nil once closed
	refs    int      // open Tables using it
	held    map[int64]string
	retired bool // the path names another file now
}

var (
	tablesMu sync.Mutex // guards tables; taken before any tableFile.mu
	tables   = map[string]*tableFile{}
)

// ErrNoTable is wrapped by the error of OpenExistingTable when the table's
// file does not exist: no key of it was ever locked, so none is held.
var ErrNoTable = errors.New("lock table does not exist")

// OpenTable opens the lock table name in dir, creating dir (0700) and the
// file (0600) if missing. Close it when done with it.
func OpenTable(dir, name string) (*Table, error) {
	return openTable(dir, name, true)
}

// OpenExistingTable is OpenTable without creating anything: the error
// wraps ErrNoTable when the file does not exist.
func OpenExistingTable(dir, name string) (*Table, error) {
	return openTable(dir, name, false)
}

func openTable(dir, name string, create bool) (*Table, error) {
	path, err := lockPath(dir, name)
	if err != nil {
		return nil, err
	}
	if path, err = filepath.Abs(path); err != nil {
		return nil, fmt.Errorf("open lock table %s: %w", name, err)
	}
	if create {
		if err := makeDir(dir); err != nil {
			return nil, err
		}
	}
	tf, err := acquireFile(path, create)
	if err != nil {
		return nil, fmt.Errorf("open lock table %s: %w", name, err)
	}
	return &Table{name: name, path: path, tf: tf}, nil
}

// acquireFile returns the process's open file of path, opening it if
// needed, with one more reference.
func acquireFile(path string, create bool) (*tableFile, error) {
	tablesMu.Lock()
	defer tablesMu.Unlock()
	tf := tables[path]
	if tf == nil {
		flag := os.O_RDWR | openNoFollow // write locks need a writable descriptor
		if create {
			flag |= os.O_CREATE
		}
		f, err := os.OpenFile(path, flag, 0o600) // os.OpenFile adds O_CLOEXEC
		if errors.Is(err, fs.ErrNotExist) && !create {
			return nil, ErrNoTable
		}
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("%s is not a regular file", path)
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		tf = &tableFile{path: path, fi: fi, f: f, held: map[int64]string{}}
		tables[path] = tf
	}
	tf.mu.Lock()
	tf.refs++
	tf.mu.Unlock()
	return tf, nil
}

// release drops a reference.
func (tf *tableFile) release() {
	tf.mu.Lock()
	tf.refs--
	idle := tf.refs == 0 && len(tf.held) == 0
	tf.mu.Unlock()
	if idle {
		tf.closeIfIdle()
	}
}

// closeIfIdle closes the file when no Table uses it and it holds no key:
// closing it then releases nothing.
func (tf *tableFile) closeIfIdle() {
	tablesMu.Lock()
	defer tablesMu.Unlock()
	tf.mu.Lock()
	defer tf.mu.Unlock()
	if tf.refs > 0 || len(tf.held) > 0 || tf.f == nil {
		return
	}
	if tables[tf.path] == tf {
		delete(tables, tf.path)
	}
	tf.f.Close()
	tf.f = nil
}

// retire takes tf out of the registry: its path names another file now.
func (tf *tableFile) retire() {
	tablesMu.Lock()
	defer tablesMu.Unlock()
	if tables[tf.path] == tf {
		delete(tables, tf.path)
	}
	tf.mu.Lock()
	tf.retired = true
	tf.mu.Unlock()
}

// Close lets go of the table. Keys still held stay held until unlocked.
// Close is idempotent.
func (t *Table) Close() error {
	t.mu.Lock()
	tf := t.tf
	t.tf = nil
	t.mu.Unlock()
	if tf != nil {
		tf.release()
	}
	return nil
}

// file returns the table's current file, switching to a new one when the
// one it had was retired.
func (t *Table) file() (*tableFile, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tf == nil {
		return nil, fmt.Errorf("lock table %s: %w", t.name, os.ErrClosed)
	}
	t.tf.mu.Lock()
	retired := t.tf.retired
	t.tf.mu.Unlock()
	if retired {
		tf, err := acquireFile(t.path, true)
		if err != nil {
			return nil, fmt.Errorf("open lock table %s: %w", t.name, err)
		}
		t.tf.release()
		t.tf = tf
	}
	return t.tf, nil
}

// offset is key's byte in the table: 62 bits of its FNV-1a hash.
func offset(key string) int64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int64(h.Sum64() >> 2)
}

// KeyLock is a held key of a Table.
type KeyLock struct {
	tf   *tableFile
	key  string
	off  int64
	mu   sync.Mutex
	done bool
}

// TryLock takes key without waiting. When another holder, in this process
// or another, holds it, the error is a *HeldError (errors.Is(err,
// ErrHeld)) naming the key, with a zero Holder. An invalid key is refused
// with an *ids.InvalidError.
func (t *Table) TryLock(key string) (*KeyLock, error) {
	if err := ids.Validate("lock key", key); err != nil {
		return nil, err
	}
	off := offset(key)
	for range maxReplaced {
		tf, err := t.file()
		if err != nil {
			return nil, err
		}
		l, err := tf.tryLock(key, off)
		if err != nil {
			if errors.Is(err, errBusy) {
				return nil, &HeldError{Name: key}
			}
			return nil, fmt.Errorf("lock %s in %s: %w", key, t.name, err)
		}
		if tf.current() {
			return l, nil
		}
		// Locked a file the path no longer names: lock the new one.
		if err := l.Unlock(); err != nil {
			return nil, err
		}
		tf.retire()
	}
	return nil, fmt.Errorf("lock %s: lock table %s keeps being replaced", key, t.path)
}

func (tf *tableFile) tryLock(key string, off int64) (*KeyLock, error) {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	if tf.f == nil {
		return nil, os.ErrClosed
	}
	if _, ok := tf.held[off]; ok {
		return nil, errBusy
	}
	err := tf.fcntl(cmdSetLock, unix.F_WRLCK, off)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
		return nil, errBusy
	}
	if err != nil {
		return nil, err
	}
	tf.held[off] = key
	return &KeyLock{tf: tf, key: key, off: off}, nil
}

// current reports whether tf's path still names tf's file.
func (tf *tableFile) current() bool {
	fi, err := os.Lstat(tf.path)
	return err == nil && os.SameFile(fi, tf.fi)
}

// Held reports whether key is held, by this process or another. Like
// Describe, it answers for an instant: the key may be taken or released
// right after.
func (t *Table) Held(key string) (bool, error) {
	if err := ids.Validate("lock key", key); err != nil {
		return false, err
	}
	off := offset(key)
	tf, err := t.file()
	if err != nil {
		return false, err
	}
	if !tf.current() {
		tf.retire()
		if tf, err = t.file(); err != nil {
			return false, err
		}
	}
	tf.mu.Lock()
	defer tf.mu.Unlock()
	if _, ok := tf.held[off]; ok {
		return true, nil
	}
	if tf.f == nil {
		return false, fmt.Errorf("test lock %s in %s: %w", key, t.name, os.ErrClosed)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Start: off, Len: 1}
	if err := unix.FcntlFlock(tf.f.Fd(), cmdGetLock, &lk); err != nil {
		return false, fmt.Errorf("test lock %s in %s: %w", key, t.name, err)
	}
	return lk.Type != unix.F_UNLCK, nil
}

// Key returns the locked key.
func (l *KeyLock) Key() string { return l.key }

// Unlock releases the key. It is idempotent; if releasing fails, a later
// Unlock tries again.
func (l *KeyLock) Unlock() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return nil
	}
	tf := l.tf
	tf.mu.Lock()
	err := tf.fcntl(cmdSetLock, unix.F_UNLCK, l.off)
	if err == nil {
		delete(tf.held, l.off)
	}
	idle := tf.refs == 0 && len(tf.held) == 0
	tf.mu.Unlock()
	if err != nil {
		// Still in held: this process must not hand the key out while it
		// may still hold its kernel lock.
		return fmt.Errorf("unlock %s: %w", l.key, err)
	}
	l.done = true
	if idle {
		tf.closeIfIdle()
	}
	return nil
}

// fcntl sets (or clears, with F_UNLCK) the lock on the byte at off; the
// caller holds tf.mu.
func (tf *tableFile) fcntl(cmd int, typ int16, off int64) error {
	lk := unix.Flock_t{Type: typ, Start: off, Len: 1}
	for {
		err := unix.FcntlFlock(tf.f.Fd(), cmd, &lk)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
