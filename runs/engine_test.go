package runs

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/text"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/internal/testflows"
	"github.com/cairnhq/cairn/internal/testws"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/workflows"
	"github.com/cairnhq/cairn/workspace"
)

// testEnv is a workspace with a SQLite store and an engine over it.
type testEnv struct {
	t   *testing.T
	ws  *workspace.Workspace
	st  store.Store
	e   *Engine
	ctx context.Context
}

// setup makes a workspace holding the given workflow files and an engine
// (not started). opts adjust the engine's options.
func setup(t *testing.T, files map[string]string, opts ...func(*Options)) *testEnv {
	t.Helper()
	ws := testws.New(t, files)
	st := testws.Store(t, ws, sqlite.Options{})
	te := &testEnv{t: t, ws: ws, st: st, ctx: context.Background()}
	te.e = te.engine(opts...)
	return te
}

// engine returns another engine over te's store (stopped at cleanup).
func (te *testEnv) engine(opts ...func(*Options)) *Engine {
	te.t.Helper()
	o := Options{Store: te.st, Workspace: te.ws, AdoptEvery: 100 * time.Millisecond, CancelPoll: 50 * time.Millisecond, KillGrace: 2 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	e, err := New(o)
	if err != nil {
		te.t.Fatal(err)
	}
	te.t.Cleanup(e.Stop)
	return e
}

// launch launches target with input on te's engine.
func (te *testEnv) launch(target, input string) *Run {
	te.t.Helper()
	r, err := te.e.Launch(te.ctx, LaunchParams{Target: target, Input: json.RawMessage(input)})
	if err != nil {
		te.t.Fatalf("launch %s: %v", target, err)
	}
	return r
}

// wait waits (with a generous deadline, never as an assertion of speed)
// until the run settles or parks on a question.
func (te *testEnv) wait(e *Engine, id string) *Run {
	te.t.Helper()
	ctx, cancel := context.WithTimeout(te.ctx, 60*time.Second)
	defer cancel()
	r, err := e.WaitSettledOrParked(ctx, id)
	if err != nil {
		te.t.Fatalf("wait for run %s: %v", id, err)
	}
	return r
}

// records reads a run's whole journal.
func (te *testEnv) records(e *Engine, id string) []Record {
	te.t.Helper()
	out, err := e.ReadOutput(te.ctx, id, ReadParams{Limit: 10000})
	if err != nil {
		te.t.Fatal(err)
	}
	return out.Records
}

func (te *testEnv) path(rel string) string { return filepath.Join(te.ws.Root, rel) }

func (te *testEnv) read(rel string) string {
	te.t.Helper()
	b, err := os.ReadFile(te.path(rel))
	if err != nil {
		te.t.Fatal(err)
	}
	return string(b)
}

func stepStatuses(r *Run) string {
	var s []string
	for _, st := range r.Steps {
		s = append(s, st.ID+"="+st.Status)
	}
	return strings.Join(s, " ")
}

// testdataFiles are the workflows of testdata/ that tests name.
//
//go:embed testdata/*.yaml
var testdataFiles embed.FS

// testdata returns the named files of testdata/ by name, for setup.
func testdata(t *testing.T, names ...string) map[string]string {
	t.Helper()
	files := make(map[string]string, len(names))
	for _, name := range names {
		b, err := testdataFiles.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(b)
	}
	return files
}

// helloYAML greets, asks and finishes: the workflow most tests run.
var helloYAML = testflows.Hello

func TestLaunchRunsToSuccess(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"two.yaml": `
description: two steps and a JSON output
steps:
  - id: emit
    shell: 'echo "{\"n\": 41}"; echo warn >&2'
  - id: use
    exec: ["sh", "-c", "echo $0", "${{ steps.emit.output.n + 1 }}"]
result: '${{ {"n": steps.emit.output.n, "next": steps.use.stdout} }}'
`})
	r := te.launch("two", "")
	if r.Status != store.RunRunning || r.OwnerPID != os.Getpid() || r.Target != "two" || string(r.Input) != "{}" || r.Trigger.Kind != "manual" {
		t.Fatalf("launched run: %+v", r.Run)
	}
	done := te.wait(te.e, r.ID)
	if done.Status != store.RunSucceeded {
		t.Fatalf("status %s (%s)", done.Status, done.Error)
	}
	var res map[string]any
	if err := json.Unmarshal(done.Result, &res); err != nil || res["n"] != float64(41) || res["next"] != "42" {
		t.Fatalf("result %s (%v)", done.Result, err)
	}
	if got := stepStatuses(done); got != "emit=succeeded use=succeeded" {
		t.Fatalf("steps: %s", got)
	}
	if done.Steps[0].PID == 0 || done.Steps[0].ExitCode == nil || *done.Steps[0].ExitCode != 0 || done.Steps[0].Attempts != 1 {
		t.Fatalf("step view: %+v", done.Steps[0])
	}
	if done.StartedAt.IsZero() || done.FinishedAt.IsZero() || done.OwnerPID != os.Getpid() {
		t.Fatalf("timestamps or owner missing: %+v", done.Run)
	}
	recs := te.records(te.e, r.ID)
	if len(recs) < 4 || recs[0].Type != RecordStart || recs[0].Run != r.ID || recs[0].Target != "two" || recs[0].PID != os.Getpid() {
		t.Fatalf("first record: %+v", recs)
	}
	last := recs[len(recs)-1]
	if last.Type != RecordEnd || last.Status != "succeeded" || string(last.Result) != string(done.Result) {
		t.Fatalf("last record: %+v", last)
	}
	var texts []string
	for _, rec := range recs {
		if rec.Type == RecordText {
			texts = append(texts, rec.Step+"/"+rec.Stream+":"+rec.Text)
		}
	}
	sort.Strings(texts)
	if got := strings.Join(texts, ","); got != `emit/stderr:warn,emit/stdout:{"n": 41},use/stdout:42` {
		t.Fatalf("text records: %s", got)
	}
	fi, err := os.Stat(filepath.Join(te.ws.OutputDir(), r.ID+".jsonl"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal mode: %v %v", fi, err)
	}
}

func TestBadInputStoresNothing(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{
		"hello.yaml":  helloYAML,
		"typed.yaml":  "input:\n  type: object\n  properties:\n    n: {type: integer}\n  required: [n]\nsteps:\n  - id: a\n    exec: [\"true\"]\n",
		"broken.yaml": "steps:\n  - id: a\n    exec: [\"true\"\n",
		"both.yaml":   "steps:\n  - id: a\n    exec: [\"true\"]\n    shell: \"true\"\n",
	})
	cases := []struct {
		name, target, input string
		check               func(error) bool
		want                string
	}{
		{"unknown target", "nope", "", isType[*workflows.NotFoundError], `no workflow named "nope"`},
		{"input not an object", "hello", `[1]`, isType[*workflows.InputError], "input: must be a JSON object"},
		{"input fails the schema", "typed", `{"n": "x"}`, isType[*workflows.InputError], "input: /n:"},
		{"missing required input", "typed", `{}`, isType[*workflows.InputError], "input:"},
		{"input not JSON", "hello", `{"who":`, isType[*workflows.InputError], "not valid JSON"},
		{"wrong type with default", "hello", `{"who": 3}`, isType[*workflows.InputError], "/who"},
		{"malformed YAML", "broken", "", isType[*workflows.Error], "broken.yaml:"},
		{"exec and shell", "both", "", isType[*workflows.Error], "has both exec and shell"},
		{"dot-dot id", "../x", "", isType[*ids.InvalidError], "invalid workflow name"},
		{"NUL byte", "hel\x00lo", "", isType[*ids.InvalidError], "not allowed"},
		{"1 KB id", strings.Repeat("a", 1024), "", isType[*ids.InvalidError], "longer than"},
		{"empty id", "", "", isType[*ids.InvalidError], "must not be empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := te.e.Launch(te.ctx, LaunchParams{Target: c.target, Input: json.RawMessage(c.input)})
			if err == nil || !c.check(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Launch(%q, %q) = %v (%T); want %q", text.Shorten(c.target, 20), c.input, err, err, c.want)
			}
		})
	}
	if c, err := te.st.Counts(te.ctx); err != nil || c.Runs != 0 {
		t.Fatalf("runs stored after refused launches: %+v %v", c, err)
	}
	entries, _ := os.ReadDir(te.ws.OutputDir())
	if len(entries) != 0 {
		t.Fatalf("journals written for refused launches: %v", entries)
	}
	for _, id := range []string{"../x", "a\x00b", strings.Repeat("r", 1024)} {
		if _, err := te.e.Get(te.ctx, id); !isType[*ids.InvalidError](err) {
			t.Fatalf("Get(%q): %v", text.Shorten(id, 10), err)
		}
		if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: id, Answer: "x"}); !isType[*ids.InvalidError](err) {
			t.Fatalf("Answer(%q): %v", text.Shorten(id, 10), err)
		}
		if _, err := te.e.Cancel(te.ctx, id); !isType[*ids.InvalidError](err) {
			t.Fatalf("Cancel(%q): %v", text.Shorten(id, 10), err)
		}
		if _, err := te.e.ReadOutput(te.ctx, id, ReadParams{}); !isType[*ids.InvalidError](err) {
			t.Fatalf("ReadOutput(%q): %v", text.Shorten(id, 10), err)
		}
	}
	if _, err := te.e.Get(te.ctx, "run_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(missing): %v", err)
	}
}

func isType[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}

// waitStepStarted waits until step of run id started its process, and
// returns the process's pid.
func waitStepStarted(t *testing.T, te *testEnv, e *Engine, id, step string) int {
	t.Helper()
	return waitRecord(t, te, e, id, func(r Record) bool {
		return r.Type == RecordStep && r.Step == step && r.Event == "started" && r.PID != 0
	}).PID
}

var errFound = errors.New("found")

// waitRecord follows run id's journal on e until a record matches, and
// returns it.
func waitRecord(t *testing.T, te *testEnv, e *Engine, id string, match func(Record) bool) Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(te.ctx, 60*time.Second)
	defer cancel()
	var found Record
	_, err := e.Follow(ctx, id, FollowParams{OnRecord: func(r Record) error {
		if match(r) {
			found = r
			return errFound
		}
		return nil
	}})
	if !errors.Is(err, errFound) {
		t.Fatalf("run %s: the record never came: %v", id, err)
	}
	return found
}

// waitFor waits until cond holds, testing it again after each change e
// makes or notices.
func waitFor(t *testing.T, e *Engine, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		changed := e.changes()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("never %s", what)
		}
	}
}

func TestEditedYAMLDoesNotChangeALaunchedRun(t *testing.T) {
	t.Parallel()
	const v1 = "steps:\n  - id: a\n    shell: 'echo v1 >> out.txt'\n  - id: b\n    shell: 'echo v1-b >> out.txt'\n"
	const v2 = "steps:\n  - id: a\n    shell: 'echo v2 >> out.txt'\n"
	te := setup(t, map[string]string{"edit.yaml": v1})
	r, err := te.e.Launch(te.ctx, LaunchParams{Target: "edit", Detach: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(te.ws.WorkflowsDir(), "edit.yaml"), []byte(v2), 0o600); err != nil {
		t.Fatal(err)
	}
	peer := te.engine()
	if err := peer.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	done := te.wait(peer, r.ID)
	if done.Status != store.RunSucceeded || te.read("out.txt") != "v1\nv1-b\n" || stepStatuses(done) != "a=succeeded b=succeeded" {
		t.Fatalf("resumed run: %s, out.txt %q, steps %s", done.Status, te.read("out.txt"), stepStatuses(done))
	}
	// A new launch takes the edited file.
	again := te.wait(peer, te.launch("edit", "").ID)
	if again.Status != store.RunSucceeded || te.read("out.txt") != "v1\nv1-b\nv2\n" {
		t.Fatalf("new launch: %s, out.txt %q", again.Status, te.read("out.txt"))
	}
}

func TestInMemoryEngineWritesNoFiles(t *testing.T) {
	t.Parallel()
	ws := testws.New(t, map[string]string{"hello.yaml": helloYAML})
	stateRoot := filepath.Dir(ws.StateDir)
	e, err := New(Options{Store: memory.New(), Workspace: ws, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := e.Launch(ctx, LaunchParams{Target: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.WaitSettledOrParked(ctx, r.ID)
	if err != nil || p.Question == nil {
		t.Fatalf("parked: %v %v", p, err)
	}
	if _, err := e.Answer(ctx, AnswerParams{RunID: r.ID, Answer: "yes"}); err != nil {
		t.Fatal(err)
	}
	done, err := e.Watch(ctx, r.ID, WatchParams{})
	if err != nil || done.Status != store.RunSucceeded {
		t.Fatalf("done: %v %v", done, err)
	}
	if _, err := os.Stat(stateRoot); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the in-memory engine wrote under the state root: %v", err)
	}
}

// waitIdle waits until e executes nothing: an execution unwinds (journal,
// lock) just after the store says its run settled or parked.
func waitIdle(t *testing.T, e *Engine) {
	t.Helper()
	waitFor(t, e, "idle", func() bool { return e.Executing() == 0 })
}
