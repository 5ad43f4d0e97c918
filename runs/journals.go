package runs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/internal/ids"
)

// journals stores run journals: files under the state dir, or memory for
// in-memory engines.
type journals interface {
	// open returns an appender for run id's journal, creating it.
	open(id string) (journalFile, error)
	// reader returns the journal's bytes from off to its current end; a
	// journal that does not exist yet is empty.
	reader(id string, off int64) (io.ReadCloser, error)
	// size is the journal's current length (0 when missing).
	size(id string) (int64, error)
	// remove deletes the journal and returns the bytes it held (0 when
	// missing).
	remove(id string) (int64, error)
	// stale lists the runs whose journal last changed before t.
	stale(before time.Time) ([]string, error)
}

type journalFile interface {
	write(line []byte) error
	// sync waits until what was written is readable by every reader (a
	// store journal appends in the background); files and memory are at
	// once.
	sync() error
	close() error
}

// fileJournals keeps journals as files in dir (the workspace's output
// folder), 0600.
type fileJournals struct {
	dir   string
	dirOK atomic.Bool  // dir was there at the last open
	w     journalWatch // see journal_watch.go
}

// path is run id's journal file. The engine validates run ids where they
// come in (its exported methods), once; ids from the store were.
func (j *fileJournals) path(id string) string { return filepath.Join(j.dir, id+journalExt) }

// journalExt ends a journal file's name: output/<run-id>.jsonl.
const journalExt = ".jsonl"

func (j *fileJournals) open(id string) (journalFile, error) {
	p := j.path(id)
	if !j.dirOK.Load() {
		if err := os.MkdirAll(j.dir, 0o700); err != nil {
			return nil, fmt.Errorf("open journal %s: %w", p, err)
		}
		j.dirOK.Store(true)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE|noFollow, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		// The folder went away since: make it again.
		j.dirOK.Store(false)
		if err := os.MkdirAll(j.dir, 0o700); err != nil {
			return nil, fmt.Errorf("open journal %s: %w", p, err)
		}
		f, err = os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE|noFollow, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("open journal %s: %w", p, err)
	}
	return osJournal{f}, nil
}

type osJournal struct{ f *os.File }

// write appends one whole line with one write(2): with O_APPEND, lines of
// different writers never interleave.
func (o osJournal) write(line []byte) error {
	_, err := o.f.Write(line)
	return err
}

func (o osJournal) sync() error { return nil }

func (o osJournal) close() error { return o.f.Close() }

func (j *fileJournals) reader(id string, off int64) (io.ReadCloser, error) {
	p := j.path(id)
	f, err := os.OpenFile(p, os.O_RDONLY|noFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", p, err)
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("read journal %s: %w", p, err)
	}
	return f, nil
}

func (j *fileJournals) size(id string) (int64, error) {
	p := j.path(id)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read journal %s: %w", p, err)
	}
	return fi.Size(), nil
}

func (j *fileJournals) remove(id string) (int64, error) {
	// A step file left by a run that never settled here goes with it.
	if err := os.Remove(stepFilePath(j.dir, id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("remove step file of run %s: %w", id, err)
	}
	files, err := removeRunFolder(j.dir, id) // output: file steps' files
	if err != nil {
		return 0, err
	}
	p := j.path(id)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return files, nil
	}
	if err == nil {
		err = os.Remove(p)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("remove journal %s: %w", p, err)
	}
	return fi.Size() + files, nil
}

func (j *fileJournals) stale(before time.Time) ([]string, error) {
	entries, err := os.ReadDir(j.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list journals: %w", err)
	}
	// A run's journal, or its folder of output files (output: file), the
	// one a crash between removing the two left.
	var out []string
	seen := map[string]bool{}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), journalExt)
		if ok && !e.Type().IsRegular() || !ok && !e.IsDir() {
			continue
		}
		if seen[id] || ids.Validate("run id", id) != nil {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(before) {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// JournalDir is a workspace's journal folder (workspace.OutputDir) for a
// caller without an engine, such as a read-only gc; Engine has the same
// methods.
type JournalDir string

// RemoveJournal deletes run id's journal file and returns its size.
func (d JournalDir) RemoveJournal(id string) (int64, error) {
	if err := ids.Validate("run id", id); err != nil {
		return 0, err
	}
	return (&fileJournals{dir: string(d)}).remove(id)
}

// StaleJournals lists the runs whose journal file last changed before t.
func (d JournalDir) StaleJournals(before time.Time) ([]string, error) {
	return (&fileJournals{dir: string(d)}).stale(before)
}

// memJournals keeps journals in memory.
type memJournals struct {
	mu   sync.Mutex
	data map[string][]byte
}

func newMemJournals() *memJournals { return &memJournals{data: map[string][]byte{}} }

func (m *memJournals) open(id string) (journalFile, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.data[id]; !ok {
		m.data[id] = nil
	}
	return memJournal{m, id}, nil
}

type memJournal struct {
	m  *memJournals
	id string
}

func (w memJournal) write(line []byte) error {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	w.m.data[w.id] = append(w.m.data[w.id], line...)
	return nil
}

func (w memJournal) sync() error { return nil }

func (w memJournal) close() error { return nil }

func (m *memJournals) reader(id string, off int64) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.data[id]
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	return io.NopCloser(bytes.NewReader(bytes.Clone(b[off:]))), nil
}

func (m *memJournals) size(id string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(len(m.data[id])), nil
}

func (m *memJournals) remove(id string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.data[id])
	delete(m.data, id)
	return int64(n), nil
}

// stale is empty: memory journals go with their process, and with their
// runs through remove.
func (m *memJournals) stale(time.Time) ([]string, error) { return nil, nil }
