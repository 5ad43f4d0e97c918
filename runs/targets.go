package runs

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cairnhq/cairn/workflows"
)

// Targets is where the engine finds what it can launch, and where an
// automation's fire finds what it queues: one cached loader, one
// freshness rule. Implementations are safe for concurrent use.
type Targets interface {
	// Target returns the workflow named name: a *workflows.NotFoundError
	// when there is none, the load error (file, line, field) when its file
	// is broken, an *ids.InvalidError for a name that is not an id.
	Target(name string) (*workflows.Workflow, error)
	// List returns every loadable workflow by name, and the errors of the
	// files that did not load.
	List() (map[string]*workflows.Workflow, []error)
	// Snapshot returns the workflows as they are now, after one freshness
	// check: preparing many runs from one snapshot checks the folder once.
	Snapshot() *Workflows
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
	dir   string
	check func(*workflows.Workflow) error // nil: every workflow that parses

	mu   sync.Mutex
	snap *Workflows // nil until loaded
}

// Workflows is one load of a workflows folder; immutable once built, so
// it is safe to share.
type Workflows struct {
	dir     string
	stamps  dirStamps
	byName  map[string]*workflows.Workflow
	errs    []error
	loads   uint64           // which load of its loader this is
	refused map[string]error // workflows that parse but the check refused
}

// dirStamps is what the folder and its workflow files looked like, stat'ed
// before reading them: the freshness rule compares them.
type dirStamps struct {
	dir   fs.FileInfo // nil when missing
	files []fileStamp
	racy  bool  // some stamp is too recent to trust, or the folder could not be read
	err   error // reading the folder failed (other than its absence)
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
	return d.Snapshot().Target(name)
}

func (d *dirTargets) List() (map[string]*workflows.Workflow, []error) {
	return d.Snapshot().List()
}

// Snapshot returns an up-to-date load, loading the folder again when it
// changed.
func (d *dirTargets) Snapshot() *Workflows {
	d.mu.Lock()
	s := d.snap
	d.mu.Unlock()
	if s != nil && s.fresh() {
		return s
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.snap != s && d.snap.fresh() {
		return d.snap // another caller loaded it meanwhile
	}
	var n uint64
	if d.snap != nil {
		n = d.snap.loads + 1
	}
	d.snap = load(d.dir, d.check)
	d.snap.loads = n
	return d.snap
}

// Target returns the workflow named name (see Targets.Target).
func (w *Workflows) Target(name string) (*workflows.Workflow, error) {
	if err, ok := w.refused[name]; ok {
		return nil, err
	}
	if wf, ok := w.byName[name]; ok {
		return wf, nil
	}
	// Not loaded: let Load say why (an invalid name, a broken file, a
	// duplicate name, or no such workflow).
	return workflows.Load(w.dir, name)
}

// List returns every loadable workflow by name, and the errors of the
// files that did not load.
func (w *Workflows) List() (map[string]*workflows.Workflow, []error) {
	return maps.Clone(w.byName), slices.Clone(w.errs)
}

// Version changes when a workflow file does (see Fingerprint), so a
// scheduler does not fire runs it prepared from older definitions. A load
// too recent to trust has a version of its own.
func (w *Workflows) Version() (string, error) {
	if w.stamps.err != nil {
		return "", w.stamps.err
	}
	v := w.stamps.String()
	if w.stamps.racy {
		v += fmt.Sprintf("racy load %d\n", w.loads)
	}
	return v, nil
}

// fresh reports whether the folder is as it was when w was loaded: a
// stat of the folder (its time changes when a file is added, removed or
// renamed) and of each file.
func (w *Workflows) fresh() bool {
	if w.stamps.racy {
		return false
	}
	fi, err := os.Stat(w.dir)
	if err != nil {
		return w.stamps.dir == nil && os.IsNotExist(err)
	}
	if w.stamps.dir == nil || !same(w.stamps.dir, fi) {
		return false
	}
	for _, f := range w.stamps.files {
		fi, err := os.Stat(filepath.Join(w.dir, f.name))
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

// stampDir stats the folder and its workflow files. The racy rule
// compares file times to the wall clock, not to an engine's clock: the
// file system writes them from the wall clock.
func stampDir(dir string) dirStamps {
	now := time.Now()
	var s dirStamps
	fi, err := os.Stat(dir)
	if err != nil {
		if !os.IsNotExist(err) {
			s.racy = true // cannot tell: look again next time
			s.err = fmt.Errorf("read workflows folder: %w", err)
		}
		return s
	}
	s.dir = fi
	s.racy = racy(fi, now)
	entries, err := os.ReadDir(dir)
	if err != nil {
		s.racy = true
		s.err = fmt.Errorf("read workflows folder: %w", err)
	}
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
	return s
}

// String is the stamps as text: one line per file with its size,
// modification time and identity.
func (s dirStamps) String() string {
	var b strings.Builder
	for _, f := range s.files {
		if f.fi == nil {
			fmt.Fprintf(&b, "%s:?\n", f.name)
			continue
		}
		var ino uint64
		if st, ok := f.fi.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
		fmt.Fprintf(&b, "%s:%d:%d:%d\n", f.name, f.fi.Size(), f.fi.ModTime().UnixNano(), ino)
	}
	return b.String()
}

// Fingerprint summarises a workflows folder's files (name, size,
// modification time, identity), the freshness rule of DirTargets as
// text: it changes when a file does, without reading any. A missing
// folder has the empty fingerprint; a folder written too recently to
// trust its stamps has a fingerprint of its own each time.
func Fingerprint(dir string) (string, error) {
	s := stampDir(dir)
	if s.err != nil {
		return "", s.err
	}
	v := s.String()
	if s.racy {
		v += fmt.Sprintf("racy at %d\n", time.Now().UnixNano())
	}
	return v, nil
}

// load stats the folder and its workflow files, then loads them: a change
// made while loading shows as a stale stamp, and the next call loads
// again.
func load(dir string, check func(*workflows.Workflow) error) *Workflows {
	w := &Workflows{dir: dir, stamps: stampDir(dir)}
	w.byName, w.errs = workflows.LoadDir(dir)
	w.refuse(check)
	return w
}
