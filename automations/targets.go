package automations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
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

// BatchTargets is Targets that prepare many runs with one look at their
// definitions (WorkflowTargets): the scheduler prepares the fires due at
// one instant through it.
type BatchTargets interface {
	Targets
	PrepareAll(ctx context.Context, reqs []PrepareRequest) ([]*store.Run, []error)
}

var _ BatchTargets = (*WorkflowTargets)(nil)

// TargetsFunc adapts a function to Targets.
type TargetsFunc func(ctx context.Context, target string, input json.RawMessage) (*store.Run, error)

func (f TargetsFunc) Prepare(ctx context.Context, target string, input json.RawMessage) (*store.Run, error) {
	return f(ctx, target, input)
}

// LiteralsFunc builds a run's literals from its workflow and validated
// input: what the run engine executes when it runs or resumes the run.
type LiteralsFunc func(w *workflows.Workflow, input map[string]any) (json.RawMessage, error)

// WorkflowTargets serves the workflows of a workspace's
// .cairn/workflows folder to fires: a thin adapter over the run engine's
// loader (runs.DirTargets) and preparation (runs.Prepare), so a fired run
// is made exactly as a launched one, with the same cache and freshness
// rule.
type WorkflowTargets struct {
	Dir string
	// Literals, when set, builds the literals instead of runs.Literals
	// (which runs.Prepare uses already: setting it to runs.Literals
	// changes nothing).
	Literals LiteralsFunc
	// Source, when set, is the loader to share, such as the run engine's
	// Targets(): one cache per process. Default: runs.DirTargets(Dir).
	Source runs.Targets
	// EnvPass names the variables a fired run captures besides the
	// allowlist (config env.pass; see runs.CaptureEnv).
	EnvPass []string

	once sync.Once
	src  runs.Targets
}

func (t *WorkflowTargets) source() runs.Targets {
	t.once.Do(func() {
		t.src = t.Source
		if t.src == nil {
			t.src = runs.DirTargets(t.Dir)
		}
	})
	return t.src
}

// Workflow returns the named workflow, loading the folder again if it
// changed.
func (t *WorkflowTargets) Workflow(name string) (*workflows.Workflow, error) {
	if err := ids.Validate("target", name); err != nil {
		return nil, err
	}
	return t.source().Target(name)
}

func (t *WorkflowTargets) Prepare(ctx context.Context, target string, input json.RawMessage) (*store.Run, error) {
	return t.prepare(t.source().Snapshot(), target, input)
}

// PrepareRequest names one run to prepare.
type PrepareRequest = runs.PrepareParams

// PrepareAll prepares many runs with one look at the folder; errs[i] is
// the error of reqs[i] (runs[i] is then nil).
func (t *WorkflowTargets) PrepareAll(ctx context.Context, reqs []PrepareRequest) (out []*store.Run, errs []error) {
	snap := t.source().Snapshot()
	out, errs = make([]*store.Run, len(reqs)), make([]error, len(reqs))
	for i, r := range reqs {
		out[i], errs[i] = t.prepare(snap, r.Target, r.Input)
	}
	return out, errs
}

func (t *WorkflowTargets) prepare(snap *runs.Workflows, target string, input json.RawMessage) (*store.Run, error) {
	if err := ids.Validate("target", target); err != nil {
		return nil, err
	}
	p, err := snap.Prepare(runs.PrepareParams{Target: target, Input: input, Env: runs.CaptureEnv(t.EnvPass)})
	var inErr *workflows.InputError
	switch {
	case errors.As(err, &inErr):
		return nil, fmt.Errorf("target %s: %w", target, err)
	case err != nil:
		return nil, err
	}
	if t.Literals != nil && !isRunsLiterals(t.Literals) {
		if p.Run.Literals, err = t.Literals(p.Workflow, p.Input); err != nil {
			return nil, fmt.Errorf("target %s: build literals: %w", target, err)
		}
	}
	p.Run.Status = ""
	return p.Run, nil
}

// Version returns the loaded folder's version: it changes when a
// workflow file does, so a scheduler does not fire runs it prepared from
// the old definitions.
func (t *WorkflowTargets) Version() (string, error) { return t.source().Snapshot().Version() }

// Fingerprint summarises a workflows folder's files (runs.Fingerprint:
// the run engine's freshness rule) so that a change is noticed without
// reading them. A missing folder has the empty fingerprint.
func Fingerprint(dir string) (string, error) { return runs.Fingerprint(dir) }

// isRunsLiterals reports whether f is runs.Literals, which Prepare used
// already: the literals are not built twice.
func isRunsLiterals(f LiteralsFunc) bool {
	return reflect.ValueOf(f).Pointer() == reflect.ValueOf(runs.Literals).Pointer()
}
