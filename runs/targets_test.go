package runs

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

// DirTargets keeps parsed workflows while their files are unchanged, and
// loads them again when a file changes, appears or goes away.
func TestDirTargetsCacheRefreshes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour).Truncate(time.Millisecond).Add(123456) // not whole seconds
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	age := func(names ...string) { // out of the racy window
		t.Helper()
		for _, n := range append(names, ".") {
			if err := os.Chtimes(filepath.Join(dir, n), old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	desc := func(tg Targets, name string) string {
		t.Helper()
		w, err := tg.Target(name)
		if err != nil {
			t.Fatalf("Target(%s): %v", name, err)
		}
		return w.Description
	}
	write("a.yaml", "description: one\nsteps:\n  - id: s\n    exec: [\"true\"]\n")
	age("a.yaml")
	tg := DirTargets(dir)
	first, err := tg.Target("a")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := tg.Target("a"); again != first {
		t.Fatal("an unchanged file was parsed again")
	}

	// Edited in place (another size).
	write("a.yaml", "description: two!\nsteps:\n  - id: s\n    exec: [\"true\"]\n")
	age("a.yaml")
	if got := desc(tg, "a"); got != "two!" {
		t.Fatalf("after an edit: %q", got)
	}
	// Replaced by rename with the same size and times: another file.
	write("tmp", "description: six!\nsteps:\n  - id: s\n    exec: [\"true\"]\n")
	if err := os.Rename(filepath.Join(dir, "tmp"), filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	age("a.yaml")
	if got := desc(tg, "a"); got != "six!" {
		t.Fatalf("after a replace: %q", got)
	}
	// A file written just now is read again until it is old enough to
	// trust its time stamp: a second edit within the same tick shows.
	write("a.yaml", "description: ten!\nsteps:\n  - id: s\n    exec: [\"true\"]\n")
	if got := desc(tg, "a"); got != "ten!" {
		t.Fatalf("after a recent edit: %q", got)
	}
	write("a.yaml", "description: 11!!\nsteps:\n  - id: s\n    exec: [\"true\"]\n")
	if got := desc(tg, "a"); got != "11!!" {
		t.Fatalf("after a second recent edit of the same size: %q", got)
	}
	// Added, listed, removed.
	write("b.yaml", "description: bee\nsteps:\n  - id: s\n    exec: [\"true\"]\n")
	age("a.yaml", "b.yaml")
	if got := desc(tg, "b"); got != "bee" {
		t.Fatalf("an added file: %q", got)
	}
	if all, errs := tg.List(); len(all) != 2 || len(errs) != 0 {
		t.Fatalf("List = %v, %v", all, errs)
	}
	if err := os.Remove(filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Target("b"); !errors.Is(err, workflows.ErrNotFound) {
		t.Fatalf("a removed file: %v", err)
	}
	// A broken file names itself; an invalid name is refused.
	write("c.yaml", "steps: [")
	if _, err := tg.Target("c"); err == nil || !errors.As(err, new(*workflows.Error)) {
		t.Fatalf("a broken file: %v", err)
	}
	if _, errs := tg.List(); len(errs) != 1 {
		t.Fatalf("List errors = %v, want the broken file's", errs)
	}
	if _, err := tg.Target("../a"); err == nil {
		t.Fatal("an invalid name was accepted")
	}
}

// A missing folder holds no workflows, and one created later is seen.
func TestDirTargetsMissingFolder(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "workflows")
	tg := DirTargets(dir)
	if _, err := tg.Target("a"); !errors.Is(err, workflows.ErrNotFound) {
		t.Fatalf("no folder: %v", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("steps:\n  - id: s\n    exec: [\"true\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Target("a"); err != nil {
		t.Fatalf("after the folder appeared: %v", err)
	}
}

// Prepare validates the input, fills its defaults and builds literals
// that execute as launched; one snapshot prepares many runs.
func TestPrepare(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.yaml"), []byte(helloYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	snap := DirTargets(dir).Snapshot()
	a, err := snap.Prepare(PrepareParams{Target: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := snap.Prepare(PrepareParams{Target: "hello", Input: json.RawMessage(`{"who": "Ann"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if a.Run.ID == b.Run.ID || a.Run.Status != store.RunQueued || string(a.Run.Input) != `{"who":"world"}` || b.Input["who"] != "Ann" {
		t.Fatalf("prepared %+v and %+v", a.Run, b.Run)
	}
	wf, in, err := parseLiterals(b.Run.Literals)
	if err != nil || wf.Name != "hello" || in["who"] != "Ann" {
		t.Fatalf("literals give back %v %v %v", wf, in, err)
	}
	if _, err := snap.Prepare(PrepareParams{Target: "hello", Input: json.RawMessage(`{"who": 1}`)}); !errors.As(err, new(*workflows.InputError)) {
		t.Fatalf("a refused input: %v", err)
	}
	if _, err := snap.Prepare(PrepareParams{Target: "nope"}); !errors.Is(err, workflows.ErrNotFound) {
		t.Fatalf("an unknown target: %v", err)
	}
}
