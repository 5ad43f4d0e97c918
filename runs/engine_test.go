package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/ids"
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
	root := t.TempDir()
	wfDir := filepath.Join(root, ".cairn", "workflows")
	if err := os.MkdirAll(wfDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(wfDir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.Resolve(root, root, filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Prepare(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, ws.DBPath(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	te := &testEnv{t: t, ws: ws, st: st, ctx: ctx}
	te.e = te.engine(opts...)
	t.Cleanup(func() { st.Close() })
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

const helloYAML = `name: hello
description: Greet, ask, finish
input:
  type: object
  properties:
    who: {type: string, default: world}
steps:
  - id: greet
    exec: ["echo", "hello ${{ input.who }}"]
  - id: confirm
    ask: "Go on, ${{ input.who }}?"
    choices: ["yes", "no"]
  - id: write
    if: ${{ steps.confirm.answer == "yes" }}
    shell: 'echo "$ANSWER" >> out.txt'
    env: {ANSWER: "${{ steps.confirm.answer }} from ${{ steps.greet.stdout }}"}
    timeout: 30s
  - id: nap
    sleep: 10ms
result: ${{ steps.greet.stdout }}
`

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

func TestAskAnswerAndLaterStepsSeeIt(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"hello.yaml": helloYAML})
	r := te.launch("hello", `{"who": "Ada"}`)
	parked := te.wait(te.e, r.ID)
	if parked.Status != store.RunWaiting || parked.Question == nil || parked.Question.Text != "Go on, Ada?" || fmt.Sprint(parked.Question.Choices) != "[yes no]" {
		t.Fatalf("parked: %+v %+v", parked.Run, parked.Question)
	}
	if got := stepStatuses(parked); got != "greet=succeeded confirm=waiting write=pending nap=pending" {
		t.Fatalf("steps while parked: %s", got)
	}
	// Parked runs hold no goroutine (the execution may still be unwinding).
	waitIdle(t, te.e)
	var ae *AnswerError
	if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: r.ID, Answer: "maybe"}); !errors.As(err, &ae) || !strings.Contains(err.Error(), `"maybe" is not one of the choices: "yes", "no"`) {
		t.Fatalf("answer outside the choices: %v", err)
	}
	if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: r.ID, QuestionID: "q_old", Answer: "yes"}); err == nil {
		t.Fatal("an answer to another question was accepted")
	}
	// A second engine (a peer) answers; this engine's peer loop resumes it.
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	a, err := te.engine().Answer(te.ctx, AnswerParams{RunID: r.ID, QuestionID: parked.Question.ID, Answer: "yes"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != store.RunRunning && !a.Status.Settled() {
		t.Fatalf("after the answer: %s", a.Status)
	}
	done := te.wait(te.e, r.ID)
	if done.Status != store.RunSucceeded || string(done.Result) != `"hello Ada"` {
		t.Fatalf("done: %s %s %s", done.Status, done.Result, done.Error)
	}
	if got := te.read("out.txt"); got != "yes from hello Ada\n" {
		t.Fatalf("out.txt = %q", got)
	}
	if *done.Steps[1].Answer != "yes" {
		t.Fatalf("confirm step: %+v", done.Steps[1])
	}
	_, err = te.e.Answer(te.ctx, AnswerParams{RunID: r.ID, Answer: "yes"})
	var se *StateError
	if !errors.As(err, &se) || err.Error() != fmt.Sprintf("run %s is not waiting (status: succeeded)", r.ID) {
		t.Fatalf("answer of a settled run: %v", err)
	}
	var types []string
	for _, rec := range te.records(te.e, r.ID) {
		types = append(types, rec.Type)
	}
	if got := strings.Join(types, " "); !strings.HasPrefix(got, "start ") || !strings.Contains(got, " question answer note ") || !strings.HasSuffix(got, " end") {
		t.Fatalf("journal record types: %s", got)
	}
}

func TestConditionFalseSkips(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"hello.yaml": helloYAML})
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	r := te.launch("hello", "")
	p := te.wait(te.e, r.ID)
	if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: r.ID, QuestionID: p.Question.ID, Answer: "no"}); err != nil {
		t.Fatal(err)
	}
	done := te.wait(te.e, r.ID)
	if done.Status != store.RunSucceeded || stepStatuses(done) != "greet=succeeded confirm=succeeded write=skipped nap=succeeded" {
		t.Fatalf("done: %s %s", done.Status, stepStatuses(done))
	}
	if _, err := os.Stat(te.path("out.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the skipped step ran: %v", err)
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
				t.Fatalf("Launch(%q, %q) = %v (%T); want %q", shorten(c.target, 20), c.input, err, err, c.want)
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
			t.Fatalf("Get(%q): %v", shorten(id, 10), err)
		}
		if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: id, Answer: "x"}); !isType[*ids.InvalidError](err) {
			t.Fatalf("Answer(%q): %v", shorten(id, 10), err)
		}
		if _, err := te.e.Cancel(te.ctx, id); !isType[*ids.InvalidError](err) {
			t.Fatalf("Cancel(%q): %v", shorten(id, 10), err)
		}
		if _, err := te.e.ReadOutput(te.ctx, id, ReadParams{}); !isType[*ids.InvalidError](err) {
			t.Fatalf("ReadOutput(%q): %v", shorten(id, 10), err)
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

func TestCancelWaitingRunAtOnce(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"hello.yaml": helloYAML})
	r := te.launch("hello", "")
	p := te.wait(te.e, r.ID)
	c, err := te.engine().Cancel(te.ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != store.RunCancelled || c.Question != nil {
		t.Fatalf("cancelled: %+v", c.Run)
	}
	if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: r.ID, QuestionID: p.Question.ID, Answer: "yes"}); err == nil || err.Error() != fmt.Sprintf("run %s is not waiting (status: cancelled)", r.ID) {
		t.Fatalf("answer after cancel: %v", err)
	}
	if _, err := te.e.Cancel(te.ctx, r.ID); err == nil || err.Error() != fmt.Sprintf("run %s is already cancelled", r.ID) {
		t.Fatalf("second cancel: %v", err)
	}
	out, err := te.e.ReadOutput(te.ctx, r.ID, ReadParams{})
	if err != nil || !out.Done || out.Records[len(out.Records)-1].Type != RecordEnd || out.Records[len(out.Records)-1].Status != "cancelled" {
		t.Fatalf("journal after cancel: %+v %v", out, err)
	}
}

func TestCancelRunningStepKillsItsGroup(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"long.yaml": `
steps:
  - id: nap
    shell: 'sleep 60 & echo $! > child.pid; wait'
`})
	r := te.launch("long", "")
	pid := waitStepStarted(t, te, te.e, r.ID, "nap")
	childPID := 0
	for deadline := time.Now().Add(30 * time.Second); childPID == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(te.path("child.pid"))
		fmt.Sscan(string(b), &childPID)
	}
	if _, err := te.e.Cancel(te.ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	done := te.wait(te.e, r.ID)
	if done.Status != store.RunCancelled || done.Steps[0].Status != StepCancelled {
		t.Fatalf("after cancel: %s %s", done.Status, stepStatuses(done))
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the step's process %d is still there: %v", pid, err)
	}
	// The background sleep in the step's group is gone too (it may linger
	// as a zombie until init reaps it, so read its state).
	if childPID != 0 && alive(childPID) {
		t.Fatalf("the step's background process %d is still running", childPID)
	}
}

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// waitStepStarted waits until the journal shows step started and returns
// its process id.
func waitStepStarted(t *testing.T, te *testEnv, e *Engine, id, step string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(te.ctx, 60*time.Second)
	defer cancel()
	cursor := ""
	for {
		out, err := e.ReadOutput(ctx, id, ReadParams{Cursor: cursor, Wait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range out.Records {
			if rec.Type == RecordStep && rec.Step == step && rec.Event == "started" && rec.PID != 0 {
				return rec.PID
			}
		}
		if out.Done || ctx.Err() != nil {
			t.Fatalf("step %s never started (done %v)", step, out.Done)
		}
		cursor = out.Cursor
	}
}

func TestTimeoutRetryAndOutputCap(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{
		"slow.yaml":  "steps:\n  - id: s\n    exec: [\"sleep\", \"30\"]\n    timeout: 200ms\n",
		"flaky.yaml": "steps:\n  - id: f\n    shell: 'echo x >> tries; test $(wc -l < tries) -ge 3'\n    retry: {attempts: 3, backoff: 10ms}\n",
		"loud.yaml":  "steps:\n  - id: l\n    shell: 'head -c 5000 /dev/zero | tr \"\\\\0\" a; echo'\n",
	}, func(o *Options) { o.OutputCap = 1000; o.KillGrace = 500 * time.Millisecond })
	slow := te.wait(te.e, te.launch("slow", "").ID)
	if slow.Status != store.RunFailed || slow.Error != "step s: timed out after 200ms" {
		t.Fatalf("slow: %s %q", slow.Status, slow.Error)
	}
	flaky := te.wait(te.e, te.launch("flaky", "").ID)
	if flaky.Status != store.RunSucceeded || flaky.Steps[0].Attempts != 3 {
		t.Fatalf("flaky: %s %s %+v", flaky.Status, flaky.Error, flaky.Steps)
	}
	loud := te.wait(te.e, te.launch("loud", "").ID)
	if loud.Status != store.RunSucceeded {
		t.Fatalf("loud: %s %s", loud.Status, loud.Error)
	}
	l, err := te.st.Ledger(te.ctx, loud.ID)
	if err != nil {
		t.Fatal(err)
	}
	rec := decodeRecord(l[0].Result)
	if len(rec.Stdout) != 1000 || !rec.StdoutTruncated {
		t.Fatalf("kept %d bytes of stdout (truncated %v), want 1000", len(rec.Stdout), rec.StdoutTruncated)
	}
	var journalled int
	for _, r := range te.records(te.e, loud.ID) {
		if r.Type == RecordText {
			journalled += len(r.Text)
		}
	}
	if journalled != 5000 {
		t.Fatalf("the journal got %d bytes of output, want all 5000", journalled)
	}
}

func TestStepEnvironmentAndDir(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{
		"env.yaml": "steps:\n  - id: e\n    exec: [\"env\"]\n    env: {EXTRA: \"${{ run.target }}\"}\n    dir: sub\n  - id: pwd\n    exec: [\"pwd\"]\n    dir: sub\n",
		"out.yaml": "steps:\n  - id: e\n    exec: [\"true\"]\n    dir: link\n",
		"fds.yaml": "steps:\n  - id: fds\n    shell: 'for f in /proc/$$/fd/*; do readlink \"$f\" || true; done'\n",
	})
	if err := os.Mkdir(te.path("sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), te.path("link")); err != nil {
		t.Fatal(err)
	}
	r := te.wait(te.e, te.launch("env", "").ID)
	if r.Status != store.RunSucceeded {
		t.Fatalf("env: %s %s", r.Status, r.Error)
	}
	l, _ := te.st.Ledger(te.ctx, r.ID)
	allowed := map[string]bool{"PATH": true, "HOME": true, "LANG": true, "TZ": true, "EXTRA": true, "CAIRN_RUN_ID": true, "CAIRN_STEP_ID": true, "CAIRN_WORKSPACE": true}
	vars := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(decodeRecord(l[0].Result).Stdout), "\n") {
		k, v, _ := strings.Cut(line, "=")
		if !allowed[k] {
			t.Errorf("the step saw %s, which is not allowlisted", k)
		}
		vars[k] = v
	}
	if vars["EXTRA"] != "env" || vars["CAIRN_RUN_ID"] != r.ID || vars["CAIRN_STEP_ID"] != "e" || vars["PATH"] == "" {
		t.Fatalf("step env: %v", vars)
	}
	if got := strings.TrimSpace(decodeRecord(l[1].Result).Stdout); got != te.path("sub") {
		t.Fatalf("pwd = %q, want %q", got, te.path("sub"))
	}
	// The step inherits nothing of ours: no lock file, no database, no
	// journal (all are close-on-exec).
	fds := te.wait(te.e, te.launch("fds", "").ID)
	l, _ = te.st.Ledger(te.ctx, fds.ID)
	if fds.Status != store.RunSucceeded {
		t.Fatalf("fds: %s %s", fds.Status, fds.Error)
	}
	for _, target := range strings.Fields(decodeRecord(l[0].Result).Stdout) {
		if strings.HasPrefix(target, te.ws.StateDir) {
			t.Errorf("the step inherited a descriptor of %s", target)
		}
	}
	out := te.wait(te.e, te.launch("out", "").ID)
	if out.Status != store.RunFailed || !strings.Contains(out.Error, "leaves the workspace") {
		t.Fatalf("a dir symlinked out of the workspace: %s %q", out.Status, out.Error)
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

// orphan stores a run as a crashed owner leaves it: running, owner pid
// gone, lock free, with steps started as given.
func orphan(t *testing.T, te *testEnv, target string, started map[string]bool) string {
	t.Helper()
	wf, err := te.e.Targets().Target(target)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := wf.ValidateInput(nil)
	lits, _ := Literals(wf, in)
	id := ids.New("run")
	// Hold the run's lock while setting it up, so no peer adopts it halfway.
	lock, err := te.e.locker.tryLock(id)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	if err := te.st.CreateRun(te.ctx, &store.Run{ID: id, Target: target, Literals: lits}); err != nil {
		t.Fatal(err)
	}
	claim := "dead-claim"
	if _, err := te.st.ClaimRun(te.ctx, store.ClaimParams{ID: id, Claim: claim, PID: 999999999, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, st := range wf.Steps {
		finished, ok := started[st.ID]
		if !ok {
			break
		}
		if _, err := te.st.StartStep(te.ctx, store.StepStart{RunID: id, Claim: claim, Path: st.ID, Position: 1, Kind: string(st.Kind), PID: 999999999}); err != nil {
			t.Fatal(err)
		}
		if finished {
			if _, err := te.st.FinishStep(te.ctx, store.StepFinish{RunID: id, Claim: claim, Path: st.ID, Position: 1, Status: StepSucceeded, Result: json.RawMessage(`{"stdout":"recorded\n"}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return id
}

func TestAdoptionReplaysTheLedger(t *testing.T) {
	t.Parallel()
	const wf = `
steps:
  - id: one
    shell: 'echo one >> out-$CAIRN_RUN_ID'
  - id: two
    shell: 'echo two >> out-$CAIRN_RUN_ID'
  - id: safe
    shell: 'echo safe >> out-$CAIRN_RUN_ID'
    safe_to_repeat: true
  - id: last
    exec: ["sh", "-c", "echo ${{ steps.one.stdout }} >> out-$CAIRN_RUN_ID"]
`
	te := setup(t, map[string]string{"four.yaml": wf})
	cases := []struct {
		name    string
		started map[string]bool
		answer  string // to the ambiguity question; "" when none is expected
		status  store.RunStatus
		lines   string
	}{
		{"finished steps are not run again", map[string]bool{"one": true, "two": true}, "", store.RunSucceeded, "safe\nrecorded\n"},
		{"safe step re-runs", map[string]bool{"one": true, "two": true, "safe": false}, "", store.RunSucceeded, "safe\nrecorded\n"},
		{"unsafe step asks, retry", map[string]bool{"one": true, "two": false}, AnswerRetry, store.RunSucceeded, "two\nsafe\nrecorded\n"},
		{"unsafe step asks, skip", map[string]bool{"one": true, "two": false}, AnswerSkip, store.RunSucceeded, "safe\nrecorded\n"},
		{"unsafe step asks, fail", map[string]bool{"one": false}, AnswerFail, store.RunFailed, ""},
	}
	peer := te.engine()
	if err := peer.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			id := orphan(t, te, "four", c.started)
			r := te.wait(peer, id)
			if c.answer != "" {
				if r.Status != store.RunWaiting || r.Question == nil || r.Question.Kind != "ambiguous" || !strings.HasSuffix(r.Question.Text, "may or may not have run: retry, skip or fail?") {
					t.Fatalf("expected the ambiguity question, got %s %+v", r.Status, r.Question)
				}
				if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: id, QuestionID: r.Question.ID, Answer: c.answer}); err != nil {
					t.Fatal(err)
				}
				r = te.wait(peer, id)
			}
			if r.Status != c.status {
				t.Fatalf("status %s (%s), want %s", r.Status, r.Error, c.status)
			}
			b, _ := os.ReadFile(te.path("out-" + id))
			if string(b) != c.lines {
				t.Fatalf("lines %q, want %q", b, c.lines)
			}
			var resumed bool
			for _, rec := range te.records(peer, id) {
				if rec.Type == RecordNote && rec.Text == fmt.Sprintf("resumed by pid %d; previous owner pid 999999999 is gone", os.Getpid()) {
					resumed = true
				}
			}
			if !resumed {
				t.Fatal("the journal does not say who resumed the run")
			}
		})
	}
}

func TestDurableSleepParksAndWakes(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"nap.yaml": "steps:\n  - id: nap\n    sleep: 300ms\n  - id: after\n    exec: [\"true\"]\n"},
		func(o *Options) { o.ParkSleepsOver = 50 * time.Millisecond })
	r := te.launch("nap", "")
	// Parked on the sleep: waiting with a wake time, no question.
	ctx, cancel := context.WithTimeout(te.ctx, 30*time.Second)
	defer cancel()
	for {
		got, err := te.st.GetRun(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == store.RunWaiting {
			if got.Question != nil || got.WakeAt.IsZero() {
				t.Fatalf("sleeping run: %+v", got)
			}
			if busy, _ := te.e.Busy(te.ctx); !busy {
				t.Fatal("a run sleeping durably does not keep peers busy")
			}
			break
		}
		if got.Status.Settled() || ctx.Err() != nil {
			t.Fatalf("never parked: %s", got.Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	done := te.wait(te.e, r.ID)
	if done.Status != store.RunSucceeded || done.Steps[0].Until.IsZero() {
		t.Fatalf("after the sleep: %s %+v", done.Status, done.Steps)
	}
	waitIdle(t, te.e)
	if busy, _ := te.e.Busy(te.ctx); busy {
		t.Fatal("busy with nothing to do")
	}
}

func TestStopReleasesAndPeerAsks(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"long.yaml": "steps:\n  - id: nap\n    exec: [\"sleep\", \"60\"]\n"})
	first := te.engine(func(o *Options) { o.StopGrace = 100 * time.Millisecond })
	r, err := first.Launch(te.ctx, LaunchParams{Target: "long"})
	if err != nil {
		t.Fatal(err)
	}
	pid := waitStepStarted(t, te, first, r.ID, "nap")
	first.Stop()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the step's process survived Stop: %v", err)
	}
	got, _ := te.st.GetRun(te.ctx, r.ID)
	if got.Status != store.RunRunning || got.OwnerPID != 0 {
		t.Fatalf("released run: %+v", got)
	}
	if _, err := first.Launch(te.ctx, LaunchParams{Target: "long"}); !errors.Is(err, ErrStopped) {
		t.Fatalf("launch after stop: %v", err)
	}
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	p := te.wait(te.e, r.ID)
	if p.Status != store.RunWaiting || p.Question == nil || p.Question.Step != "nap" {
		t.Fatalf("after adoption: %s %+v", p.Status, p.Question)
	}
	c, err := te.e.Cancel(te.ctx, r.ID)
	if err != nil || c.Status != store.RunCancelled {
		t.Fatalf("cancel: %v %v", c, err)
	}
}

func TestOwnerGoneIsReported(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"four.yaml": "steps:\n  - id: one\n    exec: [\"true\"]\n"})
	id := orphan(t, te, "four", map[string]bool{"one": false})
	// An engine whose clock is an hour ahead sees the run untouched for
	// long enough; it never executes anything here.
	watcher := te.engine(func(o *Options) { o.Clock = aheadClock{time.Hour} })
	out, err := watcher.ReadOutput(te.ctx, id, ReadParams{Wait: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if out.OwnerGone != 999999999 || out.Done || out.Status != store.RunRunning {
		t.Fatalf("output: %+v", out)
	}
}

type aheadClock struct{ d time.Duration }

func (c aheadClock) Now() time.Time { return time.Now().Add(c.d) }

func (c aheadClock) NewTimer(d time.Duration) clock.Timer { return clock.Real{}.NewTimer(d) }

func TestReadRecordsKeepsAnIncompleteLine(t *testing.T) {
	t.Parallel()
	in := `{"type":"start","run":"r"}` + "\n" + `{"type":"text","text":"a"}` + "\n" + `{"type":"te`
	recs, n, err := readRecords(strings.NewReader(in), 100)
	if err != nil || len(recs) != 2 || recs[1].Text != "a" || int(n) != strings.LastIndexByte(in, '\n')+1 {
		t.Fatalf("records %+v, consumed %d, %v", recs, n, err)
	}
	recs, n, _ = readRecords(strings.NewReader(in), 1)
	if len(recs) != 1 || int(n) != strings.IndexByte(in, '\n')+1 {
		t.Fatalf("limit 1: %+v %d", recs, n)
	}
	recs, _, _ = readRecords(strings.NewReader("garbage\n"), 10)
	if len(recs) != 1 || recs[0].Type != RecordNote || !strings.Contains(recs[0].Text, "unreadable") {
		t.Fatalf("garbage line: %+v", recs)
	}
	if _, err := parseCursor("-1"); err == nil {
		t.Fatal("a negative cursor was accepted")
	}
}

func TestInMemoryEngineWritesNoFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	wfDir := filepath.Join(root, ".cairn", "workflows")
	if err := os.MkdirAll(wfDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wfDir, "hello.yaml"), []byte(helloYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	stateRoot := filepath.Join(t.TempDir(), "state")
	ws, err := workspace.Resolve(root, root, stateRoot)
	if err != nil {
		t.Fatal(err)
	}
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

func TestStopLetsAStepInFlightFinish(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"two.yaml": `
steps:
  - id: first
    shell: 'sleep 0.3; echo first >> out.txt'
  - id: second
    shell: 'echo second >> out.txt'
`})
	first := te.engine()
	r, err := first.Launch(te.ctx, LaunchParams{Target: "two"})
	if err != nil {
		t.Fatal(err)
	}
	waitStepStarted(t, te, first, r.ID, "first")
	first.Stop() // the step in flight finishes; the run is released before "second"
	got, err := te.e.Get(te.ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.RunRunning || got.OwnerPID != 0 || stepStatuses(got) != "first=succeeded second=pending" {
		t.Fatalf("after Stop: %s owner %d, steps %s", got.Status, got.OwnerPID, stepStatuses(got))
	}
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	done := te.wait(te.e, r.ID)
	if done.Status != store.RunSucceeded || te.read("out.txt") != "first\nsecond\n" {
		t.Fatalf("after adoption: %s, out.txt %q", done.Status, te.read("out.txt"))
	}
}

func TestCancelQueuedRunJournal(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"hello.yaml": helloYAML})
	r, err := te.e.Launch(te.ctx, LaunchParams{Target: "hello", Detach: true, Trigger: store.Trigger{Kind: "automation", AutomationID: "aut_x"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.RunQueued || r.OwnerPID != 0 || r.Trigger.AutomationID != "aut_x" {
		t.Fatalf("detached launch: %+v", r.Run)
	}
	c, err := te.e.Cancel(te.ctx, r.ID)
	if err != nil || c.Status != store.RunCancelled {
		t.Fatalf("cancel: %v %v", c, err)
	}
	recs := te.records(te.e, r.ID)
	if len(recs) != 2 || recs[0].Type != RecordStart || recs[0].Run != r.ID || recs[1].Type != RecordEnd || recs[1].Status != "cancelled" {
		t.Fatalf("journal: %+v", recs)
	}
	// Nothing runs it later.
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := te.e.Resume(te.ctx, r.ID); ok || err != nil {
		t.Fatalf("Resume of a cancelled run: %v %v", ok, err)
	}
}

// waitIdle waits until e executes nothing: an execution unwinds (journal,
// lock) just after the store says its run settled or parked.
func waitIdle(t *testing.T, e *Engine) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for e.Executing() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still executing %d runs", e.Executing())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHTTPStep(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/echo":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"method": %q, "auth": %q, "body": %q}`, r.Method, r.Header.Get("Authorization"), body)
		default:
			http.Error(w, "nope", http.StatusTeapot)
		}
	}))
	defer srv.Close()
	te := setup(t, map[string]string{
		"call.yaml": `
input:
  type: object
  properties: {base: {type: string}}
steps:
  - id: post
    http:
      method: POST
      url: "${{ input.base }}/echo?token=secret"
      headers: {Authorization: "Bearer t"}
      body: '{"x": 1}'
  - id: use
    exec: ["echo", "${{ steps.post.output.method }} ${{ steps.post.status_code }} ${{ steps.post.output.auth }}"]
result: ${{ steps.use.stdout }}
`,
		"teapot.yaml": "input:\n  type: object\n  properties: {base: {type: string}}\nsteps:\n  - id: get\n    http:\n      url: \"${{ input.base }}/other\"\n",
	})
	in := fmt.Sprintf(`{"base": %q}`, srv.URL)
	r := te.wait(te.e, te.launch("call", in).ID)
	if r.Status != store.RunSucceeded || string(r.Result) != `"POST 200 Bearer t"` || r.Steps[0].StatusCode != 200 {
		t.Fatalf("call: %s %s %s %+v", r.Status, r.Result, r.Error, r.Steps)
	}
	for _, rec := range te.records(te.e, r.ID) {
		if strings.Contains(rec.Text, "secret") {
			t.Fatalf("the journal shows the URL's query: %+v", rec)
		}
	}
	bad := te.wait(te.e, te.launch("teapot", in).ID)
	if bad.Status != store.RunFailed || !strings.Contains(bad.Error, "unexpected status 418") || bad.Steps[0].StatusCode != 418 {
		t.Fatalf("teapot: %s %q %+v", bad.Status, bad.Error, bad.Steps)
	}
}

func TestAskTimeoutUsesTheDefault(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{
		"timed.yaml":  "steps:\n  - id: q\n    ask: \"Deploy?\"\n    choices: [\"yes\", \"no\"]\n    timeout: 200ms\n    default: \"no\"\nresult: ${{ steps.q.answer }}\n",
		"strict.yaml": "steps:\n  - id: q\n    ask: \"Deploy?\"\n    timeout: 200ms\n",
	})
	r := te.launch("timed", "")
	p := te.wait(te.e, r.ID)
	if p.Status != store.RunWaiting || p.Question == nil || p.Question.Deadline.IsZero() || p.WakeAt.IsZero() {
		t.Fatalf("parked: %+v", p.Run)
	}
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(te.ctx, 60*time.Second)
	defer cancel()
	done, err := te.e.Watch(ctx, r.ID, WatchParams{})
	if err != nil || done.Status != store.RunSucceeded || string(done.Result) != `"no"` {
		t.Fatalf("after the timeout: %+v %v", done, err)
	}
	strict, err := te.e.Watch(ctx, te.launch("strict", "").ID, WatchParams{})
	if err != nil || strict.Status != store.RunFailed || strict.Error != "step q: no answer within 200ms" {
		t.Fatalf("no default: %+v %v", strict, err)
	}
}
