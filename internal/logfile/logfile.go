// Package logfile is a size-capped log file: past its cap it is renamed
// to NAME.1 (replacing the previous one) and a new file started, so a
// long-lived process's log never holds more than about twice the cap.
package logfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// DefaultCap is the size at which a log file rotates (10 MiB).
const DefaultCap = 10 << 20

// File appends to path and rotates it at cap bytes. It is safe for
// concurrent use.
type File struct {
	path string
	cap  int64
	// follow is a descriptor (the process's stderr) that points at the
	// log: each rotation points it at the new file too, so that what is
	// written to it unstructured (a panic) lands in the current log.
	follow *os.File

	mu   sync.Mutex
	f    *os.File
	size int64
}

// Open opens (creating, mode 0600) path for appending; cap <= 0 means
// DefaultCap.
func Open(path string, cap int64) (*File, error) {
	if cap <= 0 {
		cap = DefaultCap
	}
	l := &File{path: path, cap: cap}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *File) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log %s: %w", l.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open log %s: %w", l.path, err)
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Write appends p, rotating first when p would take the file past its
// cap (a file holding nothing yet takes p whatever its size).
func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0, fs.ErrClosed
	}
	if l.size > 0 && l.size+int64(len(p)) > l.cap {
		if err := l.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, err
}

// Follow makes each rotation point f (the process's stderr, when it is
// this log) at the new file as well.
func (l *File) Follow(f *os.File) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.follow = f
}

// rotate renames the file to path.1 and opens a new one.
func (l *File) rotate() error {
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("rotate log %s: %w", l.path, err)
	}
	l.f = nil
	if err := os.Rename(l.path, l.path+".1"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rotate log %s: %w", l.path, err)
	}
	if err := l.open(); err != nil {
		return err
	}
	if l.follow != nil {
		if err := unix.Dup2(int(l.f.Fd()), int(l.follow.Fd())); err != nil {
			return fmt.Errorf("rotate log %s: point stderr at it: %w", l.path, err)
		}
	}
	return nil
}

// Close closes the file.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Same reports whether f is the file at path (the log a parent pointed a
// child's stderr at, say).
func Same(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}
