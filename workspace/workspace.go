// Package workspace finds the user's workspace, names it, and lays out and
// guards its state folder under the state root:
//
//	<root>/<id>/workspace.json   id, root, config, firstSeen, lastSeen
//	<root>/<id>/state.sqlite3    the store (+ WAL)
//	<root>/<id>/output/          run journals
//	<root>/<id>/locks/           lock files
//	<root>/<id>/memory/          session summaries
//	<root>/<id>/worker.log       background worker log
//
// The workspace is the nearest ancestor of the working directory holding a
// .cairn/ folder, else the working directory itself. Its id is the first 12
// hex digits of the SHA-256 of its canonical path.
package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/cairnhq/cairn/internal/atomicfile"
)

// DefsDirName is the folder in a workspace that holds the user's definitions.
const DefsDirName = ".cairn"

// Workspace is one project and its state folder.
type Workspace struct {
	Root     string // canonical workspace path
	ID       string
	StateDir string // <state root>/<id>
}

// Resolve returns the workspace for dir (or, when explicit is set, exactly
// that folder) with its state folder under stateRoot. It creates nothing.
func Resolve(dir, explicit, stateRoot string) (*Workspace, error) {
	root := explicit
	if root == "" {
		root = Find(dir)
	}
	canon, err := Canonical(root)
	if err != nil {
		return nil, err
	}
	id := ID(canon)
	return &Workspace{Root: canon, ID: id, StateDir: filepath.Join(stateRoot, id)}, nil
}

// Find returns the nearest ancestor of dir (dir included) holding a .cairn
// folder, or dir when there is none.
func Find(dir string) string {
	for d := dir; ; {
		if fi, err := os.Stat(filepath.Join(d, DefsDirName)); err == nil && fi.IsDir() {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// Canonical returns the absolute path of dir with symlinks resolved.
func Canonical(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve workspace %s: %w", dir, err)
	}
	canon, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("resolve workspace %s: %w", dir, err)
	}
	return canon, nil
}

// ID is the first 12 hex digits of the SHA-256 of a canonical path.
func ID(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return hex.EncodeToString(sum[:])[:12]
}

// DefsDir is the workspace's .cairn folder.
func (w *Workspace) DefsDir() string { return filepath.Join(w.Root, DefsDirName) }

// WorkflowsDir holds the user's workflow files.
func (w *Workspace) WorkflowsDir() string { return filepath.Join(w.DefsDir(), "workflows") }

// DBPath is the SQLite store.
func (w *Workspace) DBPath() string { return filepath.Join(w.StateDir, "state.sqlite3") }

// OutputDir holds run journals.
func (w *Workspace) OutputDir() string { return filepath.Join(w.StateDir, "output") }

// LocksDir holds lock files.
func (w *Workspace) LocksDir() string { return filepath.Join(w.StateDir, "locks") }

// MemoryDir holds session summaries.
func (w *Workspace) MemoryDir() string { return filepath.Join(w.StateDir, "memory") }

// LogPath is the background worker's log.
func (w *Workspace) LogPath() string { return filepath.Join(w.StateDir, "worker.log") }

// Prepare creates the state folder and its sub-folders (0700) and checks
// that they are safe to use: owned by this user, not writable by others,
// on a local file system.
func (w *Workspace) Prepare() error {
	root := filepath.Dir(w.StateDir)
	for _, d := range []string{root, w.StateDir, w.OutputDir(), w.LocksDir(), w.MemoryDir()} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create state folder %s: %w", d, err)
		}
		if err := CheckDir(d); err != nil {
			return err
		}
	}
	return nil
}

// Info is workspace.json.
type Info struct {
	ID        string    `json:"id"`
	Root      string    `json:"root"`
	Config    string    `json:"config"`
	FirstSeen time.Time `json:"firstSeen"`
	LastSeen  time.Time `json:"lastSeen"`
}

// Touch records that something ran here: it writes workspace.json with
// lastSeen = now, keeping firstSeen. Only commands that run something call
// it, never under --dry-run.
func (w *Workspace) Touch(now time.Time) error {
	p := filepath.Join(w.StateDir, "workspace.json")
	info := Info{ID: w.ID, Root: w.Root, Config: w.DefsDir(), FirstSeen: now.UTC(), LastSeen: now.UTC()}
	if old, err := ReadInfo(w.StateDir); err == nil && !old.FirstSeen.IsZero() {
		info.FirstSeen = old.FirstSeen
	}
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(p, append(b, '\n'), 0o600); err != nil {
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return fmt.Errorf("state disk full: free space on %s, then try again: %w", w.StateDir, err)
		}
		return err
	}
	return nil
}

// ReadInfo reads a state folder's workspace.json.
func ReadInfo(stateDir string) (Info, error) {
	var info Info
	b, err := os.ReadFile(filepath.Join(stateDir, "workspace.json"))
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("read %s: %w", filepath.Join(stateDir, "workspace.json"), err)
	}
	return info, nil
}

// List returns the state folders under root that hold a workspace.json,
// sorted by id. A missing root is an empty list.
func List(root string) ([]Info, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list workspaces under %s: %w", root, err)
	}
	var out []Info
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		info, err := ReadInfo(filepath.Join(root, e.Name()))
		// A path hash names a folder, or a workspace_id its info holds.
		if err != nil || len(e.Name()) != 12 && info.ID != e.Name() {
			continue
		}
		info.ID = e.Name()
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
