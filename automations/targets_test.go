package automations

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/workflows"
)

// writeWorkflow writes a workflow file dated an hour ago, older than the
// loader's racy window.
func writeWorkflow(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Millisecond).Add(123456)
	for _, q := range []string{p, dir} {
		if err := os.Chtimes(q, old, old); err != nil {
			t.Fatal(err)
		}
	}
}

const greetYAML = "input:\n  type: object\n  properties:\n    who: {type: string, default: world}\nsteps:\n  - id: s\n    exec: [\"echo\", \"${{ input.who }}\"]\n"

// A fire is prepared as a launch is: runs.Prepare's input, defaults and
// literals, from a loader that may be the engine's own.
func TestWorkflowTargetsPrepareLikeALaunch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeWorkflow(t, dir, "greet.yaml", greetYAML)
	shared := runs.DirTargets(dir)
	for name, tg := range map[string]*WorkflowTargets{
		"own loader":    {Dir: dir},
		"shared loader": {Source: shared},
		"runs.Literals": {Dir: dir, Literals: runs.Literals},
	} {
		r, err := tg.Prepare(context.Background(), "greet", nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := runs.Prepare(mustWorkflow(t, shared, "greet"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Target != "greet" || string(r.Input) != `{"who":"world"}` || string(r.Literals) != string(want.Run.Literals) || r.ID == want.Run.ID || r.Status != "" {
			t.Fatalf("%s: prepared %+v, want the literals %s", name, r, want.Run.Literals)
		}
	}
	tg := &WorkflowTargets{Dir: dir}
	var inErr *workflows.InputError
	if _, err := tg.Prepare(context.Background(), "greet", json.RawMessage(`{"who": 3}`)); !errors.As(err, &inErr) {
		t.Fatalf("a refused input: %v", err)
	}
	if _, err := tg.Prepare(context.Background(), "nope", nil); !errors.Is(err, workflows.ErrNotFound) {
		t.Fatalf("an unknown target: %v", err)
	}
	custom := &WorkflowTargets{Dir: dir, Literals: func(*workflows.Workflow, map[string]any) (json.RawMessage, error) {
		return json.RawMessage(`{"custom":true}`), nil
	}}
	if r, err := custom.Prepare(context.Background(), "greet", nil); err != nil || string(r.Literals) != `{"custom":true}` {
		t.Fatalf("a custom Literals: %+v %v", r, err)
	}
}

// PrepareAll prepares many fires from one load, each with its own error.
func TestPrepareAll(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeWorkflow(t, dir, "greet.yaml", greetYAML)
	tg := &WorkflowTargets{Dir: dir}
	out, errs := tg.PrepareAll(context.Background(), []PrepareRequest{
		{Target: "greet", Input: json.RawMessage(`{"who": "a"}`)},
		{Target: "nope"},
		{Target: "greet"},
	})
	if len(out) != 3 || errs[0] != nil || errs[2] != nil || string(out[0].Input) != `{"who":"a"}` || string(out[2].Input) != `{"who":"world"}` {
		t.Fatalf("PrepareAll = %v, %v", out, errs)
	}
	if out[1] != nil || !errors.Is(errs[1], workflows.ErrNotFound) {
		t.Fatalf("the unknown target: %v, %v", out[1], errs[1])
	}
}

// Version and Fingerprint change when a workflow file does, and only then.
func TestTargetsVersionFollowsTheFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeWorkflow(t, dir, "greet.yaml", greetYAML)
	tg := &WorkflowTargets{Dir: dir}
	v1, err := tg.Version()
	if err != nil {
		t.Fatal(err)
	}
	f1, err := Fingerprint(dir)
	if err != nil || f1 == "" || f1 != v1 {
		t.Fatalf("Fingerprint = %q, %v; Version %q", f1, err, v1)
	}
	if v, _ := tg.Version(); v != v1 {
		t.Fatalf("unchanged files, another version: %q then %q", v1, v)
	}
	writeWorkflow(t, dir, "greet.yaml", greetYAML+"description: more\n")
	v2, err := tg.Version()
	if err != nil || v2 == v1 {
		t.Fatalf("after an edit: %q, %v", v2, err)
	}
	if f, _ := Fingerprint(dir); f != v2 {
		t.Fatalf("Fingerprint %q, Version %q", f, v2)
	}
	if f, err := Fingerprint(filepath.Join(dir, "missing")); f != "" || err != nil {
		t.Fatalf("a missing folder: %q, %v", f, err)
	}
}

func mustWorkflow(t *testing.T, tg runs.Targets, name string) *workflows.Workflow {
	t.Helper()
	w, err := tg.Target(name)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
