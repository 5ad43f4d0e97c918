package workflows

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairnhq/cairn/internal/ids"
)

// isWorkflowFile reports whether a directory entry name is a workflow
// file: *.yaml or *.yml, not hidden (editors leave .#x.yaml lock files).
func isWorkflowFile(name string) bool {
	return !strings.HasPrefix(name, ".") && (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml"))
}

// loaded is the outcome for one file.
type loaded struct {
	file string // path
	w    *Workflow
	err  error
}

// LoadDir loads every workflow file in dir (normally
// <workspace>/.cairn/workflows). A missing dir holds no workflows. A file
// that fails to load gives an error naming it and is left out; the others
// still load. Two files defining the same name are both left out. Errors
// are in file-name order.
func LoadDir(dir string) (map[string]*Workflow, []error) {
	results, err := loadAll(dir)
	if err != nil {
		return map[string]*Workflow{}, []error{err}
	}
	out := map[string]*Workflow{}
	var errs []error
	for _, r := range results {
		if r.err != nil {
			errs = append(errs, r.err)
		} else {
			out[r.w.Name] = r.w
		}
	}
	return out, errs
}

// Load returns the workflow named name from dir. When no file defines it,
// the error is a *NotFoundError (`no workflow named "x"`), unless the file
// that would define it (name.yaml, name.yml) is broken or the name is
// defined twice: then that error is returned. A name that is not a valid
// id gives an *ids.InvalidError.
func Load(dir, name string) (*Workflow, error) {
	if err := ids.Validate("workflow name", name); err != nil {
		return nil, err
	}
	results, err := loadAll(dir)
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		if r.w != nil && r.w.Name == name {
			return r.w, nil
		}
	}
	for _, r := range results {
		var dup *DuplicateError
		if errors.As(r.err, &dup) && dup.Name == name {
			return nil, r.err
		}
	}
	for _, r := range results {
		if r.err != nil && DefaultName(r.file) == name {
			return nil, r.err
		}
	}
	return nil, &NotFoundError{Name: name}
}

// DuplicateError says that two files define the same workflow name.
type DuplicateError struct {
	Name  string
	Files []string
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("workflow name %q is defined by more than one file: %s; rename one", e.Name, strings.Join(e.Files, ", "))
}

func loadAll(dir string) ([]loaded, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read workflows dir: %w", err)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve workflows dir: %w", err)
	}
	var results []loaded
	byName := map[string][]int{}
	for _, e := range entries { // ReadDir sorts by name
		if !isWorkflowFile(e.Name()) {
			continue
		}
		file := filepath.Join(dir, e.Name())
		src, err := readFile(realDir, file)
		if err != nil {
			results = append(results, loaded{file: file, err: &Error{File: file, Err: err}})
			continue
		}
		w, err := Parse(file, src)
		results = append(results, loaded{file: file, w: w, err: err})
		if w != nil {
			byName[w.Name] = append(byName[w.Name], len(results)-1)
		}
	}
	for name, idx := range byName {
		if len(idx) < 2 {
			continue
		}
		files := make([]string, len(idx))
		for i, j := range idx {
			files[i] = filepath.Base(results[j].file)
		}
		for _, j := range idx {
			results[j].w = nil
			results[j].err = &Error{File: results[j].file, Field: "name", Err: &DuplicateError{Name: name, Files: files}}
		}
	}
	slices.SortStableFunc(results, func(a, b loaded) int { return strings.Compare(a.file, b.file) })
	return results, nil
}

// readFile reads a workflow file that must be a regular file inside
// realDir (a symlink may point elsewhere in the dir, not out of it) and at
// most MaxFileSize bytes.
func readFile(realDir, file string) ([]byte, error) {
	real, err := filepath.EvalSymlinks(file)
	if err != nil {
		return nil, fmt.Errorf("resolve file: %w", err)
	}
	if rel, err := filepath.Rel(realDir, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return nil, fmt.Errorf("symlink points outside the workflows dir (to %s)", real)
	}
	info, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("stat file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", info.Mode().Type())
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, fmt.Errorf("open file: %w", err)
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read file: %w", err)
	}
	if len(src) > MaxFileSize {
		return nil, fmt.Errorf("file is larger than %d bytes", MaxFileSize)
	}
	return src, nil
}
