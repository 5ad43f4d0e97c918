package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/store"
)

// TestRollKeyStartsAWorker: `roll KEY` (as a cron or systemd timer calls
// it) and `automations trigger` with no mcp-host alive start a worker and
// say so; the fired run executes and succeeds.
func TestRollKeyStartsAWorker(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"roll", "tick"}, {"--json", "automations", "trigger", "tick"}} {
		t.Run(args[len(args)-2], func(t *testing.T) {
			t.Parallel()
			c := newCLIWS(t, cliFiles(t))
			if code, _, errs := c.run("automations", "create", "--key", "tick", "--target", "ok", "--every", "24h"); code != 0 {
				t.Fatalf("automations create: exit %d %s", code, errs)
			}
			code, out, errs := c.run(args...)
			var fire automations.FireReport
			if code != 0 || json.Unmarshal([]byte(out), &fire) != nil || fire.Outcome != store.FireQueued || fire.RunID == "" {
				t.Fatalf("%v: exit %d %q %q", args, code, out, errs)
			}
			if !strings.Contains(errs, "started a background worker") {
				t.Errorf("%v did not say it started a worker: %q", args, errs)
			}
			c.waitFor("the fired run to settle", func() bool { return c.show(fire.RunID).Status.Settled() })
			if r := c.show(fire.RunID); r.Status != store.RunSucceeded {
				t.Fatalf("the fired run %s: %s", r.Status, r.Error)
			}
		})
	}
}

// TestRollTargetShowsTheQuestion: `roll <target>` whose workflow asks
// prints the question and the command that answers it, and goes on after
// the answer.
func TestRollTargetShowsTheQuestion(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, map[string]string{"asks.yaml": "steps:\n  - id: q\n    ask: Ship it?\n    choices: [yes, no]\n  - id: after\n    exec: [echo, shipped]\n"})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "--state", c.state, "--workspace", c.root, "roll", "asks")
	cmd.Env = append(os.Environ(), "CAIRN_CLI_MAIN=1")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var id string
	c.waitFor("the run to ask", func() bool {
		code, o, _ := c.run("runs", "--status", "waiting", "--json")
		var list struct{ Runs []struct{ ID string } }
		if code == 0 && json.Unmarshal([]byte(o), &list) == nil && len(list.Runs) == 1 {
			id = list.Runs[0].ID
		}
		return id != ""
	})
	if code, o, errs := c.run("answer", id, "yes"); code != 0 {
		t.Fatalf("answer: exit %d %s %s", code, o, errs)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("roll asks: %v\n%s", err, out.String())
	}
	for _, want := range []string{"?? Ship it? [yes/no]", "answer with: mcp-host answer " + id + " <answer>", "shipped", "succeeded"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("roll asks printed no %q:\n%s", want, out.String())
		}
	}
}

// TestRunsShowOwnerGone: a run whose owner was SIGKILLed while no peer is
// alive shows, in runs show, runs and status, that its owner is gone and
// that it waits for a peer.
func TestRunsShowOwnerGone(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, cliFiles(t))
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	owner := exec.Command(exe, "--state", c.state, "--workspace", c.root, "run", "long")
	owner.Env = append(os.Environ(), "CAIRN_CLI_MAIN=1")
	owner.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the step goes with it
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	var id string
	c.waitFor("the long step to start", func() bool {
		code, o, _ := c.run("runs", "--status", "running", "--json")
		var list struct {
			Runs []*struct {
				ID    string
				Steps []struct{ Status string }
			}
		}
		if code == 0 && json.Unmarshal([]byte(o), &list) == nil && len(list.Runs) == 1 && len(list.Runs[0].Steps) == 1 {
			id = list.Runs[0].ID
		}
		return id != ""
	})
	t.Cleanup(func() { // the step's own process group outlives its owner
		if pid := processWithEnv("CAIRN_RUN_ID=" + id); pid != 0 {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	})
	if r := c.show(id); r.Stalled != "" {
		t.Fatalf("a run whose owner lives is shown stalled: %q", r.Stalled)
	}
	_ = syscall.Kill(-owner.Process.Pid, syscall.SIGKILL)
	_ = owner.Wait()

	want := "owner pid " + strconv.Itoa(owner.Process.Pid) + " gone since "
	c.waitFor("the lock to be free", func() bool { return strings.Contains(c.show(id).Stalled, want) })
	r := c.show(id)
	if r.Status != store.RunRunning || !strings.Contains(r.Stalled, "waiting for a peer") || !strings.Contains(r.Stalled, "no mcp-host worker is alive") {
		t.Fatalf("runs show --json of an orphaned run: %s, stalled %q", r.Status, r.Stalled)
	}
	for _, args := range [][]string{{"runs", "show", id}, {"runs"}, {"status"}} {
		code, out, errs := c.run(args...)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("%v: exit %d; does not say the owner is gone:\n%s%s", args, code, out, errs)
		}
	}
}
