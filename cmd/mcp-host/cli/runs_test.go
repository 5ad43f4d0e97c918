package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/workflows"
)

func TestRunCommandsAttached(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, cliFiles(t))
	code, out, errs := c.run("run", "ok")
	if code != 0 || !strings.Contains(out, "[greet] hi\n") || !strings.Contains(out, ` succeeded: "hi"`) || !strings.HasPrefix(out, "run run_") {
		t.Fatalf("run ok: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	code, out, errs = c.run("run", "ok", "--json")
	var r runs.Run
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("run ok --json: exit %d %s %s", code, out, errs)
	}
	var raw map[string]any
	json.Unmarshal([]byte(out), &raw)
	for _, k := range []string{"id", "target", "status", "input", "result", "steps", "created_at", "updated_at", "started_at", "finished_at"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("run --json lacks %q: %s", k, out)
		}
	}
	if r.Status != "succeeded" || string(r.Result) != `"hi"` || len(r.Steps) != 1 || r.Steps[0].Status != "succeeded" {
		t.Fatalf("run ok --json: %+v", r)
	}
	okID := r.ID

	code, out, _ = c.run("run", "bad")
	if code != 1 || !strings.Contains(out, "[x stderr] oops") || !strings.Contains(out, " failed: step x: exit status 3") {
		t.Fatalf("run bad: exit %d\n%s", code, out)
	}

	code, out, _ = c.run("runs", "--json")
	var page struct{ Runs []runs.Run }
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Runs) != 3 {
		t.Fatalf("runs --json: exit %d %s", code, out)
	}
	code, out, _ = c.run("runs", "--status", "failed", "--json")
	if json.Unmarshal([]byte(out), &page) != nil || code != 0 || len(page.Runs) != 1 || page.Runs[0].Target != "bad" {
		t.Fatalf("runs --status failed: exit %d %s", code, out)
	}
	code, out, _ = c.run("runs", "--target", "ok", "--limit", "1")
	if code != 0 || !strings.HasPrefix(out, "ID") || strings.Count(out, "run_") != 2 || !strings.Contains(out, "more: mcp-host runs --cursor ") {
		t.Fatalf("runs --target ok --limit 1: exit %d\n%s", code, out)
	}
	badID := page.Runs[0].ID
	code, out, _ = c.run("runs", "show", okID)
	if code != 0 || !strings.Contains(out, "status    succeeded") || !strings.Contains(out, "greet  exec  succeeded  exit 0, ") || !strings.Contains(out, "output of greet (last lines)\n  | hi\n") || !strings.Contains(out, "manual by human") {
		t.Fatalf("runs show: exit %d\n%s", code, out)
	}
	code, out, _ = c.run("runs", "show", badID)
	if code != 0 || !regexp.MustCompile(`exit 3, [0-9.]+[mµ]?s, exit status 3`).MatchString(out) || !strings.Contains(out, "  | oops\n") {
		t.Fatalf("runs show of the failed run: exit %d\n%s", code, out)
	}

	code, out, _ = c.run("watch", okID)
	if code != 0 || !strings.Contains(out, "[greet] hi") {
		t.Fatalf("watch: exit %d\n%s", code, out)
	}
	code, out, _ = c.run("watch", okID, "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var first, last runs.Record
	if code != 0 || json.Unmarshal([]byte(lines[0]), &first) != nil || json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil || first.Type != "start" || last.Type != "end" {
		t.Fatalf("watch --json: exit %d\n%s", code, out)
	}

	code, _, errs = c.run("answer", okID, "yes")
	if code != 1 || errs != fmt.Sprintf("mcp-host: run %s is not waiting (status: succeeded)\n", okID) {
		t.Fatalf("answer of a settled run: exit %d %q", code, errs)
	}
	code, _, errs = c.run("cancel", okID)
	if code != 1 || errs != fmt.Sprintf("mcp-host: run %s is already succeeded\n", okID) {
		t.Fatalf("cancel of a settled run: exit %d %q", code, errs)
	}
}

func TestRunCommandsRefuseBadInput(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, map[string]string{
		"ok.yaml":     cliFiles(t)["ok.yaml"],
		"typed.yaml":  "input:\n  type: object\n  properties: {n: {type: integer}}\nsteps:\n  - id: a\n    exec: [\"true\"]\n",
		"broken.yaml": "steps: [\n",
	})
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "nope"}, 1, `no workflow named "nope"`},
		{[]string{"run", "../x"}, 1, "invalid workflow name"},
		{[]string{"run", strings.Repeat("x", 1024)}, 1, "longer than 128"},
		{[]string{"run", "ok", "--input", "{"}, 1, "input: not valid JSON"},
		{[]string{"run", "typed", "--input", `{"n": "one"}`}, 1, "input: /n:"},
		{[]string{"run", "typed", "--input", `{"s": "` + strings.Repeat("x", runs.MaxInputBytes) + `"}`}, 1, "over the cap of 262144 (256 KiB)"},
		{[]string{"run", "broken"}, 1, "broken.yaml:"},
		{[]string{"run"}, 2, "takes 1 argument"},
		{[]string{"runs", "--status", "bogus"}, 2, `--status "bogus"`},
		{[]string{"runs", "--limit", "-1"}, 2, "--limit -1"},
		{[]string{"runs", "show", "../x"}, 1, "invalid run id"},
		{[]string{"answer", "run_missing", "x"}, 1, `no run "run_missing"`},
		{[]string{"run", "ok", "--detach", "--dry-run"}, 2, "--detach cannot be used with --dry-run"},
	} {
		code, _, errs := c.run(tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
	code, out, _ := c.run("runs", "--json")
	if code != 0 || !strings.Contains(out, `"runs": []`) {
		t.Fatalf("refused launches stored runs: %s", out)
	}
}

func TestAskInRunAnswerFromAnotherCommand(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, cliFiles(t))
	type result struct {
		code      int
		out, errs string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := c.run("run", "hello", "--input", `{"who": "Cy"}`)
		done <- result{code, out, errs}
	}()
	var id string
	c.waitFor("the run to park", func() bool {
		_, out, _ := c.run("runs", "--status", "waiting", "--json")
		var page struct{ Runs []runs.Run }
		if json.Unmarshal([]byte(out), &page) == nil && len(page.Runs) == 1 {
			id = page.Runs[0].ID
			return true
		}
		return false
	})
	r := c.show(id)
	if r.Question == nil || r.Question.Text != "Go on, Cy?" {
		t.Fatalf("parked run: %+v", r.Run)
	}
	code, out, errs := c.run("answer", id, "maybe")
	if code != 1 || !strings.Contains(errs, `"maybe" is not one of the choices: "yes", "no"`) {
		t.Fatalf("answer maybe: exit %d %q %q", code, out, errs)
	}
	code, out, errs = c.run("answer", id, "yes")
	if code != 0 || out != fmt.Sprintf("answered run %s: yes\n", id) {
		t.Fatalf("answer yes: exit %d %q %q", code, out, errs)
	}
	res := <-done
	if res.code != 0 || !strings.Contains(res.out, "?? Go on, Cy? [yes/no]") || !strings.Contains(res.out, "-- answered: yes") || !strings.Contains(res.out, ` succeeded: "hello Cy"`) {
		t.Fatalf("attached run: exit %d\n%s\n%s", res.code, res.out, res.errs)
	}
	if b, _ := os.ReadFile(filepath.Join(c.root, "out.txt")); string(b) != "yes\n" {
		t.Fatalf("out.txt = %q", b)
	}
}

func TestDetachedRunWorkerAndCancel(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, cliFiles(t))
	code, out, errs := c.run("run", "ok", "--detach")
	id := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(id, "run_") || !strings.Contains(errs, "mcp-host watch "+id) || !strings.Contains(errs, "started a background worker") {
		t.Fatalf("run --detach: exit %d %q %q; want the watch command and that it started a worker", code, out, errs)
	}
	code, out, _ = c.run("watch", id)
	if code != 0 || !strings.Contains(out, "[greet] hi") {
		t.Fatalf("watch of the detached run: exit %d\n%s", code, out)
	}
	h, held, err := locks.Describe(c.ws.LocksDir(), "worker")
	if err != nil || !held || h.PID == os.Getpid() {
		t.Fatalf("no background worker holds locks/worker: %v %v %+v", err, held, h)
	}
	if r := c.show(id); r.OwnerPID != h.PID {
		t.Fatalf("the run ran in pid %d, not the worker %d", r.OwnerPID, h.PID)
	}

	code, out, _ = c.run("run", "long", "--detach", "--json")
	var long runs.Run
	if code != 0 || json.Unmarshal([]byte(out), &long) != nil || long.Status != "queued" {
		t.Fatalf("run long --detach --json: exit %d %s", code, out)
	}
	c.waitFor("the long step to start", func() bool {
		r := c.show(long.ID)
		return len(r.Steps) == 1 && r.Steps[0].Status == runs.StepRunning
	})
	code, out, errs = c.run("cancel", long.ID, "--json")
	var cancelled runs.Run
	if code != 0 || json.Unmarshal([]byte(out), &cancelled) != nil || cancelled.Status != "cancelled" || cancelled.Steps[0].Status != runs.StepCancelled {
		t.Fatalf("cancel: exit %d %s %s", code, out, errs)
	}
	code, _, _ = c.run("watch", long.ID)
	if code != 1 {
		t.Fatalf("watch of a cancelled run: exit %d, want 1", code)
	}
	if fi, err := os.Stat(c.ws.LogPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("worker.log: %v %v", fi, err)
	}
}

func TestWorkerIdleAndSingleton(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, cliFiles(t))
	code, _, errs := c.run("worker", "--idle", "100ms")
	if code != 0 {
		t.Fatalf("idle worker: exit %d %s", code, errs)
	}
	if _, held, _ := locks.Describe(c.ws.LocksDir(), "worker"); held {
		t.Fatal("the idle worker left locks/worker held")
	}
	lk, err := locks.TryLock(c.ws.LocksDir(), "worker")
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	code, _, errs = c.run("worker", "--idle", "100ms")
	if code != 0 || !strings.Contains(errs, "a worker already runs") || !strings.Contains(errs, fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second worker: exit %d %q", code, errs)
	}
	if code, _, errs = c.run("worker", "--dry-run"); code != 2 {
		t.Fatalf("worker --dry-run: exit %d %q", code, errs)
	}
}

func TestWorkerRunsQueuedWork(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, cliFiles(t))
	ctx := context.Background()
	if err := c.ws.Prepare(); err != nil {
		t.Fatal(err)
	}
	// Queue a run as an automation would: stored, no process on it.
	st, err := sqlite.Open(ctx, c.ws.DBPath(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := runs.New(runs.Options{Store: st, Workspace: c.ws})
	if err != nil {
		t.Fatal(err)
	}
	r, err := eng.Launch(ctx, runs.LaunchParams{Target: "ok", Detach: true})
	eng.Stop()
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, _, errs := c.run("worker", "--idle", "200ms")
	if code != 0 {
		t.Fatalf("worker: exit %d %s", code, errs)
	}
	if got := c.show(r.ID); got.Status != "succeeded" {
		t.Fatalf("the worker left the queued run %s", got.Status)
	}
}

func TestListAndInit(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, map[string]string{"ok.yaml": cliFiles(t)["ok.yaml"], "broken.yaml": "steps: [\n"})
	code, out, errs := c.run("list")
	if code != 0 || !strings.Contains(out, "ok") || !strings.Contains(out, "says hi") || !strings.Contains(errs, "broken.yaml") {
		t.Fatalf("list: exit %d %q %q", code, out, errs)
	}
	code, out, _ = c.run("list", "--json")
	var l struct {
		Targets []targetInfo
		Errors  []string
	}
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Targets) != 1 || l.Targets[0].Name != "ok" || len(l.Errors) != 1 {
		t.Fatalf("list --json: exit %d %s", code, out)
	}

	p := filepath.Join(c.root, ".cairn", "workflows", "hello.yaml")
	code, out, _ = c.run("init", "--dry-run")
	if _, err := os.Stat(p); code != 0 || !errors.Is(err, os.ErrNotExist) || !strings.Contains(out, "would write") {
		t.Fatalf("init --dry-run: exit %d %q %v", code, out, err)
	}
	code, out, _ = c.run("init")
	b, err := os.ReadFile(p)
	if code != 0 || err != nil || !bytes.Equal(b, workflows.Starter()) || !strings.Contains(out, "wrote "+p) {
		t.Fatalf("init: exit %d %q %v", code, out, err)
	}
	if err := os.WriteFile(p, []byte("# mine\n"+string(b)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = c.run("init", "--json")
	var res struct{ Written bool }
	if b2, _ := os.ReadFile(p); code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Written || !strings.HasPrefix(string(b2), "# mine\n") {
		t.Fatalf("second init overwrote or failed: exit %d %s", code, out)
	}
	code, out, _ = c.run("list")
	if code != 0 || !strings.Contains(out, "hello") {
		t.Fatalf("list after init: %q", out)
	}
}

func TestDryRunAnswersFromStdin(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, cliFiles(t))
	code, out, errs := c.runIn("maybe\nyes\n", "--dry-run", "run", "hello")
	if code != 0 || !strings.Contains(out, "?? Go on, world? [yes/no]") || !strings.Contains(errs, `"maybe" is not one of the choices`) || !strings.Contains(out, ` succeeded: "hello world"`) {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(c.state); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the dry run wrote under the state root: %v", err)
	}
	code, _, _ = c.runIn("", "--dry-run", "run", "hello")
	if code != 1 {
		t.Fatalf("dry run without an answer: exit %d, want 1 (cancelled)", code)
	}
}

func TestWorkerFiresAutomations(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, map[string]string{"tick.yaml": `
on:
  - every: 1s
steps:
  - id: mark
    shell: "echo tick >> ticks.txt"
`})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var errb bytes.Buffer
	go func() {
		// --idle is short: only the enabled automation keeps it up.
		done <- Main(ctx, []string{"--state", c.state, "--workspace", c.root, "worker", "--idle", "100ms"},
			Stdio{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &errb})
	}()
	ticks := func() int {
		b, _ := os.ReadFile(filepath.Join(c.root, "ticks.txt"))
		return strings.Count(string(b), "tick\n")
	}
	c.waitFor("two automation fires run by the worker", func() bool {
		select {
		case code := <-done:
			t.Fatalf("the worker exited (%d) while an automation was enabled: %s", code, errb.String())
		default:
		}
		return ticks() >= 2
	})
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("worker: exit %d: %s", code, errb.String())
	}
	// worker.log, at the default level, has the fires (each naming its
	// automation and run) and the runs' lifecycle.
	b, err := os.ReadFile(c.ws.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	wlog := string(b)
	fired := regexp.MustCompile(`msg=fired automation=tick:0 slot=\S+ run=(run_\w+)`).FindAllStringSubmatch(wlog, -1)
	if len(fired) < 2 {
		t.Fatalf("worker.log has %d fires of tick:0, want 2 or more:\n%s", len(fired), wlog)
	}
	for _, f := range fired[:2] {
		for _, want := range []string{`msg="run executing" run=` + f[1], `msg="run settled" run=` + f[1] + ` target=tick status=succeeded`} {
			if !strings.Contains(wlog, want) {
				t.Fatalf("worker.log lacks %q:\n%s", want, wlog)
			}
		}
	}
	// The fire history shows each fire's run outcome, not only queued.
	code, out, _ := c.run("automations", "show", "tick:0")
	if code != 0 || !regexp.MustCompile(`queued +`+fired[0][1]+` +succeeded\n`).MatchString(out) {
		t.Fatalf("automations show tick:0: exit %d\n%s", code, out)
	}
	code, out, _ = c.run("automations", "list", "--json")
	if code != 0 || !strings.Contains(out, `"tick:0"`) {
		t.Fatalf("automations list: exit %d: %s", code, out)
	}
	// list shows the schedule with its last and next times.
	code, out, _ = c.run("list")
	if code != 0 || !strings.Contains(out, "schedules:") || !strings.Contains(out, "tick:0") || !strings.Contains(out, "last 2") || !strings.Contains(out, "next 2") {
		t.Fatalf("list: exit %d:\n%s", code, out)
	}
	code, out, _ = c.run("list", "--json")
	var l struct{ Schedules []automations.Summary }
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Schedules) != 1 || l.Schedules[0].LastStart.IsZero() || l.Schedules[0].NextDue.IsZero() {
		t.Fatalf("list --json: exit %d: %s", code, out)
	}
}
