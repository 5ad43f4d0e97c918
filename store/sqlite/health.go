package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/wake"
	"github.com/cairnhq/cairn/store"
)

var _ store.HealthWatcher = (*Store)(nil)

// health is whether the store writes now. The writer goroutine changes
// it; anyone reads it.
type health struct {
	mu      sync.Mutex
	cur     store.Health
	changed chan struct{}
}

func (h *health) get() store.Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// set records a new state (err nil: writing) and wakes the watchers. A
// fatal state is final; a pause keeps its first fault.
func (h *health) set(err error, fatal bool, now time.Time) (changed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.cur.Fatal, err == nil && h.cur.Err == nil:
		return false
	case err != nil && !fatal && h.cur.Err != nil:
		return false // paused already: one pause, however many faults
	}
	h.cur.Err, h.cur.Fatal, h.cur.Since = err, fatal, now
	if h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
	return true
}

func (h *health) watch() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.changed == nil {
		h.changed = make(chan struct{})
	}
	return h.changed
}

// Health returns whether the store writes now.
func (s *Store) Health() store.Health { return s.health.get() }

// HealthChanged returns a channel closed at the next change of Health.
func (s *Store) HealthChanged() <-chan struct{} { return s.health.watch() }

// folder is the state folder, which errors name.
func (s *Store) folder() string { return filepath.Dir(s.path) }

// pause stops writing after a disk fault; the writer goroutine resumes
// (see recoverWrites) once a trial write commits.
func (s *Store) pause(fault error) {
	reason := store.ReasonDiskError
	if isDiskFull(fault) {
		reason = store.ReasonDiskFull
	}
	err := &store.UnavailableError{Folder: s.folder(), Reason: reason, Err: fault}
	if s.health.set(err, false, s.clk.Now()) {
		s.log.Warn("state store paused writing; it resumes by itself when the disk allows", "err", err, "fault", fault)
	}
}

// stopForGood stops writing for good: the database file vanished or was
// replaced.
func (s *Store) stopForGood(err error) {
	if s.health.set(err, true, s.clk.Now()) {
		s.log.Error("state store stopped writing for good", "err", err)
	}
}

// fileID names the database file: device and inode.
type fileID struct{ dev, ino uint64 }

func statFile(p string) (fileID, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, nil // no inodes here: nothing to compare
	}
	if st.Nlink == 0 {
		return fileID{}, errors.New("unlinked")
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, nil //nolint:unconvert // Dev's type varies by OS
}

// checkFile makes sure the file at s.path is still the one the store
// opened. When it is not, the store stops for good and checkFile returns
// the refusal every write gets from then on.
func (s *Store) checkFile() error {
	if h := s.health.get(); h.Fatal {
		return h.Err
	}
	id, err := statFile(s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		err = fmt.Errorf("%s was deleted", filepath.Base(s.path))
	case err == nil && id != s.id:
		err = fmt.Errorf("%s was replaced by another file", filepath.Base(s.path))
	}
	if err == nil {
		return nil
	}
	refusal := &store.UnavailableError{Folder: s.folder(), Reason: store.ReasonVanished, Err: err}
	s.stopForGood(refusal)
	return s.health.get().Err
}

// fileCheckEvery is how often the store looks at its file between
// commits, so that a vanished database is noticed without a write, where
// its folder cannot be watched. With a watch (inotify on the folder's
// entries, asleep while the database commits) there is no timer at all:
// the look comes fileCheckEvery after a file of the folder was deleted,
// created or renamed (a write meanwhile finds out first, and is refused
// naming the folder). A folder above the state folder moved away sends no
// event: the next write finds it out.
const fileCheckEvery = time.Second

// watchFile checks the file as above until stop is closed; once the store
// stopped for good a check costs nothing.
func (s *Store) watchFile(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	var (
		changed <-chan struct{}
		tick    <-chan time.Time
		soon    <-chan time.Time // a look after an event
	)
	d, err := wake.WatchDirEntries(filepath.Dir(s.path))
	if err == nil {
		defer d.Close()
		changed = d.Subscribe(filepath.Base(s.path)).C()
	} else {
		t := clock.NewTicker(s.clk, fileCheckEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-stop:
			return
		case <-tick:
		case <-changed:
			if d.Err() != nil { // the watch ended (the folder went): poll
				changed = nil
				t := clock.NewTicker(s.clk, fileCheckEvery)
				defer t.Stop()
				tick = t.C
			}
			if soon == nil {
				soon = s.clk.NewTimer(fileCheckEvery).C()
			}
			continue
		case <-soon:
			soon = nil
		}
		s.checkFile()
	}
}

// isDiskFault reports a full or failing disk (SQLITE_FULL, SQLITE_IOERR).
func isDiskFault(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code() & 0xff
		return code == sqlite3.SQLITE_FULL || code == sqlite3.SQLITE_IOERR
	}
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EIO)
}

func isDiskFull(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()&0xff == sqlite3.SQLITE_FULL
	}
	return errors.Is(err, syscall.ENOSPC)
}
