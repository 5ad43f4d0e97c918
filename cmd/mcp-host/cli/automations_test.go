package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/workspace"
)

// automationsWorkspace makes a workspace with a hello workflow and returns
// a function running mcp-host in it.
func automationsWorkspace(t *testing.T) (run func(args ...string) (int, string, string), ws *workspace.Workspace) {
	t.Helper()
	hello := "name: hello\ninput:\n  type: object\n  properties:\n    who: {type: string, default: world}\nsteps:\n  - id: greet\n    exec: [\"echo\", \"hello ${{ input.who }}\"]\n"
	c := newCLIWS(t, map[string]string{"hello.yaml": hello})
	return c.run, c.ws
}

func TestAutomationsCommands(t *testing.T) {
	t.Parallel()
	run, ws := automationsWorkspace(t)
	mustRun := func(args ...string) string {
		t.Helper()
		code, out, errs := run(args...)
		if code != 0 {
			t.Fatalf("mcp-host %s: exit %d: %s", strings.Join(args, " "), code, errs)
		}
		return out
	}

	out := mustRun("automations", "create", "--key", "nightly", "--target", "hello", "--cron", "0 3 * * 1-5", "--tz", "Europe/Paris", "--input", `{"who":"ops"}`, "--json")
	var res automations.CreateResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || !res.Created || res.Automation.Owner != "human" || res.Automation.Trigger.TZ != "Europe/Paris" {
		t.Fatalf("create: %s (%v)", out, err)
	}
	id := res.Automation.ID
	inputFile := filepath.Join(t.TempDir(), "input.json") // --input @FILE reads the same spec from a file
	if err := os.WriteFile(inputFile, []byte(`{"who": "ops"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := mustRun("automations", "create", "--key", "nightly", "--target", "hello", "--cron", "0 3 * * 1-5", "--tz", "Europe/Paris", "--input", "@"+inputFile); !strings.HasPrefix(out, "exists (same spec) nightly ("+id+")") {
		t.Fatalf("create again: %q", out)
	}
	if code, _, errs := run("automations", "create", "--key", "nightly", "--target", "hello", "--every", "1h"); code != 1 || !strings.Contains(errs, "different spec") {
		t.Fatalf("create with another spec: exit %d: %s", code, errs)
	}

	// Bad input: a clear message, exit 1, nothing stored.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "nope", "--every", "1h"}, `no workflow named "nope"`},
		{[]string{"--target", "hello", "--cron", "0 0 30 2 *"}, "never fires"},
		{[]string{"--target", "hello", "--cron", "0 3 * * *", "--tz", "Nowhere/Land"}, "unknown time zone"},
		{[]string{"--target", "hello", "--files", "../secrets/*"}, "leaves the workspace"},
		{[]string{"--target", "hello", "--url", "https://me:pw@example.com/"}, "must not hold credentials"},
		{[]string{"--target", "hello", "--every", "1h", "--input", `{"who":1}`}, "/who"},
	} {
		args := append([]string{"automations", "create", "--key", "bad"}, tc.args...)
		if code, _, errs := run(args...); code != 1 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want exit 1 saying %q", tc.args, code, errs, tc.want)
		}
	}
	if code, _, errs := run("automations", "create", "--key", "bad", "--target", "hello"); code != 2 || !strings.Contains(errs, "--cron, --every, --files or --url") {
		t.Fatalf("create without a trigger: exit %d: %s", code, errs)
	}
	var sums []automations.Summary
	if err := json.Unmarshal([]byte(mustRun("automations", "list", "--json")), &sums); err != nil || len(sums) != 1 || sums[0].Key != "nightly" {
		t.Fatalf("list --json: %+v, %v", sums, err)
	}
	if out := mustRun("automations", "list"); !strings.Contains(out, "KEY") || !strings.Contains(out, "cron 0 3 * * 1-5 (Europe/Paris)") {
		t.Fatalf("list: %s", out)
	}

	if out := mustRun("automations", "pause", "nightly", "--note", "holiday"); !strings.Contains(out, "paused holiday") {
		t.Fatalf("pause: %s", out)
	}
	if code, _, errs := run("automations", "trigger", "nightly"); code != 1 || errs != "mcp-host: automation nightly is paused (holiday); resume it first\n" {
		t.Fatalf("trigger while paused: exit %d: %s", code, errs)
	}
	if out := mustRun("roll", "nightly"); out != "skipped: automation nightly is paused (holiday); resume it first\n" {
		t.Fatalf("roll while paused: %q", out)
	}
	mustRun("automations", "resume", "nightly")
	if out := mustRun("automations", "update", "nightly", "--every", "2h", "--revision", "3"); !strings.Contains(out, "schedule    every 2h") {
		t.Fatalf("update: %s", out)
	}
	if code, _, errs := run("automations", "update", "nightly", "--every", "3h", "--revision", "3"); code != 1 || !strings.Contains(errs, "changed since it was read") {
		t.Fatalf("stale update: exit %d: %s", code, errs)
	}

	// This process holds locks/worker, so trigger and roll start no
	// worker and the fired run stays queued.
	wl, err := locks.TryLock(ws.LocksDir(), "worker")
	if err != nil {
		t.Fatal(err)
	}
	defer wl.Unlock()
	var fire automations.FireReport
	if err := json.Unmarshal([]byte(mustRun("automations", "trigger", id, "--json")), &fire); err != nil || fire.Outcome != "queued" || fire.RunID == "" {
		t.Fatalf("trigger: %+v, %v", fire, err)
	}
	// roll prints JSON; the run fired above is still queued: skipped.
	if err := json.Unmarshal([]byte(mustRun("roll", "nightly")), &fire); err != nil || fire.Outcome != "skipped" {
		t.Fatalf("roll: %+v, %v", fire, err)
	}
	l, err := locks.TryLock(ws.LocksDir(), "schedule:nightly")
	if err != nil {
		t.Fatal(err)
	}
	if out := mustRun("roll", "nightly"); out != fmt.Sprintf("skipped: held by pid %d\n", os.Getpid()) {
		t.Fatalf("roll of a held schedule: %q", out)
	}
	l.Unlock()
	if code, _, errs := run("roll", "nope"); code != 1 || !strings.Contains(errs, `no workflow or automation named "nope"`) {
		t.Fatalf("roll nope: exit %d: %s", code, errs)
	}

	out = mustRun("automations", "show", "nightly")
	for _, want := range []string{"nightly (" + id + ")", "fires 1 · skipped 1 · missed 0", "queued (manual)", "skipped (manual)"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if out := mustRun("automations", "delete", "nightly"); out != "deleted nightly ("+id+")\n" {
		t.Fatalf("delete: %q", out)
	}
	if out := mustRun("automations", "list"); out != "no automations\n" {
		t.Fatalf("list after delete: %q", out)
	}
}

func TestRollRunsATargetOnce(t *testing.T) {
	t.Parallel()
	run, _ := automationsWorkspace(t)
	code, out, errs := run("roll", "hello", "--input", `{"who":"roller"}`)
	if code != 0 || !strings.Contains(out, "hello roller") || !strings.Contains(out, "succeeded") {
		t.Fatalf("roll hello: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, _, errs := run("roll", "hello", "--input", `{"who":3}`); code != 1 || !strings.Contains(errs, "/who") {
		t.Fatalf("roll hello with a bad input: exit %d: %s", code, errs)
	}
}
