package automations

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

// Targets turns a target name and an input into a run ready to queue.
// Implementations are safe for concurrent use.
type Targets interface {
	// Prepare checks that target exists and input suits it, and returns a
	// run with ID, Target, Input (validated) and Literals set. An unknown
	// target gives an error wrapping workflows.ErrNotFound; an input the
	// target refuses, a *workflows.InputError.
	Prepare(ctx context.Context, target string, input json.RawMessage) (*store.Run, error)
}

// TargetsFunc adapts a function to Targets.
type TargetsFunc func(ctx context.Context, target string, input json.RawMessage) (*store.Run, error)

func (f TargetsFunc) Prepare(ctx context.Context, target string, input json.RawMessage) (*store.Run, error) {
	return f(ctx, target, input)
}

// LiteralsFunc builds a run's literals from its workflow and validated
// input: what the run engine executes when it runs or resumes the run.
type LiteralsFunc func(w *workflows.Workflow, input map[string]any) (json.RawMessage, error)

// WorkflowTargets serves the workflows of a workspace's
// .cairn/workflows folder. It reloads the folder when a file in it
// changes (name, size or modification time), so preparing many runs costs
// one directory listing each.
type WorkflowTargets struct {
	Dir string
	// Literals builds the literals; nil uses runs.Literals, the run
	// engine's own builder, so that fired runs execute like launched ones.
	Literals LiteralsFunc

	mu     sync.Mutex
	finger string
	byName map[string]*workflows.Workflow
}

// Workflow returns the named workflow, loading the folder again if it
// changed.
func (t *WorkflowTargets) Workflow(name string) (*workflows.Workflow, error) {
	if err := ids.Validate("target", name); err != nil {
		return nil, err
	}
	finger, err := Fingerprint(t.Dir)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if finger != t.finger || t.byName == nil {
		t.byName, _ = workflows.LoadDir(t.Dir)
		t.finger = finger
	}
	if w, ok := t.byName[name]; ok {
		return w, nil
	}
	// Not loaded: let Load say why (a broken file, a duplicate name, or
	// no such workflow).
	return workflows.Load(t.Dir, name)
}

func (t *WorkflowTargets) Prepare(ctx context.Context, target string, input json.RawMessage) (*store.Run, error) {
	w, err := t.Workflow(target)
	if err != nil {
		return nil, err
	}
	in, err := w.ValidateInput(input)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", target, err)
	}
	lit := t.Literals
	if lit == nil {
		lit = runs.Literals
	}
	literals, err := lit(w, in)
	if err != nil {
		return nil, fmt.Errorf("target %s: build literals: %w", target, err)
	}
	inJSON, err := runs.InputJSON(in)
	if err != nil {
		return nil, err
	}
	return &store.Run{ID: ids.New("run"), Target: w.Name, Input: inJSON, Literals: literals}, nil
}

// Version returns the folder's Fingerprint: it changes when a workflow
// file does, so a scheduler does not fire runs it prepared from the old
// definitions.
func (t *WorkflowTargets) Version() (string, error) { return Fingerprint(t.Dir) }

// Fingerprint summarises a workflows folder's files (name, size,
// modification time) so that a change is noticed without reading them. A
// missing folder has the empty fingerprint.
func Fingerprint(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read workflows folder: %w", err)
	}
	var b strings.Builder
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || (!strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml")) {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			fmt.Fprintf(&b, "%s:?\n", name)
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d\n", name, fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String(), nil
}
