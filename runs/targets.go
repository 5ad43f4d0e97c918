package runs

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn/workflows"
)

// Targets is where the engine finds what it can launch.
type Targets interface {
	// Target returns the workflow named name: a *workflows.NotFoundError
	// when there is none, the load error (file, line, field) when its file
	// is broken, an *ids.InvalidError for a name that is not an id.
	Target(name string) (*workflows.Workflow, error)
	// List returns every loadable workflow by name, and the errors of the
	// files that did not load.
	List() (map[string]*workflows.Workflow, []error)
}

// DirTargets serves the workflow files in dir (normally
// Workspace.WorkflowsDir()). It keeps them parsed and loads the folder
// again when it changed: a file added, removed or renamed (the folder's
// modification time), or a file's size, modification time or identity
// (an editor's save by rename). Checking costs a stat of the folder and
// of each file, so edits show at once without reading and parsing every
// file on every launch. A file modified within the file system's
// timestamp granularity of the load is read again on the next call (as
// git does with "racily clean" entries), so a quick second edit that
// keeps the size is not missed either.
func DirTargets(dir string) Targets { return &dirTargets{dir: dir} }

type dirTargets struct {
	dir string

	mu   sync.Mutex
	snap *dirSnapshot // nil until loaded
}

// dirSnapshot is one load of the folder; immutable once built.
type dirSnapshot struct {
	dir    fs.FileInfo // the folder as it was before the load; nil when missing
	files  []fileStamp // the workflow files, stat'ed before reading them
	racy   bool        // some stamp is too recent to trust
	byName map[string]*workflows.Workflow
	errs   []error
}

type fileStamp struct {
	name string
	fi   fs.FileInfo // nil when it could not be stat'ed
}

// racyWindow is how recent a modification time must be, at load, for the
// load not to be trusted: coarser than the timestamp granularity of the
// usual file systems (a kernel tick on Linux), and a full 2 s for
// timestamps that look like whole seconds (HFS+, FAT).
const racyWindow = 50 * time.Millisecond

func racy(fi fs.FileInfo, loadedAt time.Time) bool {
	if fi == nil {
		return false
	}
	w := racyWindow
	if fi.ModTime().Nanosecond() == 0 {
		w = 2 * time.Second
	}
	return fi.ModTime().After(loadedAt.Add(-w))
}

func (d *dirTargets) Target(name string) (*workflows.Workflow, error) {
	s := d.current()
	if w, ok := s.byName[name]; ok {
		return w, nil
	}
	// Not loaded: let Load say why (an invalid name, a broken file, a
	// duplicate name, or no such workflow).
	return workflows.Load(d.dir, name)
}

func (d *dirTargets) List() (map[string]*workflows.Workflow, []error) {
	s := d.current()
	out := make(map[string]*workflows.Workflow, len(s.byName))
	for k, v := range s.byName {
		out[k] = v
	}
	return out, append([]error(nil), s.errs...)
}

// current returns an up-to-date snapshot, loading the folder again when
// it changed.
func (d *dirTargets) current() *dirSnapshot {
	d.mu.Lock()
	s := d.snap
	d.mu.Unlock()
	if s != nil && s.fresh(d.dir) {
		return s
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.snap != s && d.snap.fresh(d.dir) {
		return d.snap // another caller loaded it meanwhile
	}
	d.snap = load(d.dir)
	return d.snap
}

// fresh reports whether the folder is as it was when s was loaded.
func (s *dirSnapshot) fresh(dir string) bool {
	if s.racy {
		return false
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return s.dir == nil && os.IsNotExist(err)
	}
	if s.dir == nil || !same(s.dir, fi) {
		return false
	}
	for _, f := range s.files {
		fi, err := os.Stat(filepath.Join(dir, f.name))
		switch {
		case f.fi == nil: // could not be stat'ed (a dangling link): still so?
			if err == nil {
				return false
			}
		case err != nil || !same(f.fi, fi):
			return false
		}
	}
	return true
}

func same(a, b fs.FileInfo) bool {
	return a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && a.Mode() == b.Mode() && os.SameFile(a, b)
}

// load stats the folder and its workflow files, then loads them: a change
// made while loading shows as a stale stamp, and the next call loads
// again.
func load(dir string) *dirSnapshot {
	now := time.Now()
	s := &dirSnapshot{}
	fi, err := os.Stat(dir)
	if err == nil {
		s.dir = fi
		s.racy = racy(fi, now)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") || (!strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml")) {
				continue
			}
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				fi = nil
			}
			s.racy = s.racy || racy(fi, now)
			s.files = append(s.files, fileStamp{name: name, fi: fi})
		}
	} else if !os.IsNotExist(err) {
		s.racy = true // cannot tell: look again next time
	}
	s.byName, s.errs = workflows.LoadDir(dir)
	return s
}
