package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/store"
)

// child runs this test binary as mcp-host in c's workspace, in a real
// child process whose whole environment is env (as `env -i` gives).
func (c *cliWS) child(env []string, args ...string) (int, string, string) {
	c.t.Helper()
	exe, err := os.Executable()
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"--state", c.state, "--workspace", c.root}, args...)...)
	cmd.Env = append(env, "CAIRN_CLI_MAIN=1", "GORACE=atexit_sleep_ms=0")
	cmd.Dir = c.root
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("run mcp-host %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// TestAnswerFromMinimalEnvKeepsLaunchEnv: a run keeps the environment it
// was launched with. Answered from `env -i PATH=/usr/bin:/bin mcp-host
// answer` (whose worker then executes the rest), its later step still
// sees the launch's PATH, HOME, LANG, TZ and the env.pass names, and not what
// env.pass does not list.
func TestAnswerFromMinimalEnvKeepsLaunchEnv(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, map[string]string{"envcheck.yaml": `
steps:
  - id: go
    ask: go on?
  - id: show
    shell: 'echo "$PATH|${HOME-unset}|${LANG-unset}|${TZ-unset}|${CAIRN_TEST_PASS-unset}|${CAIRN_TEST_OTHER-unset}"'
result: ${{ steps.show.stdout }}
`})
	if err := os.WriteFile(filepath.Join(c.root, ".cairn", "config.yaml"), []byte("env:\n  pass: [CAIRN_TEST_PASS]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	launchPATH := "/usr/local/bin:/usr/bin:/bin:/opt/launch"
	launchEnv := []string{"PATH=" + launchPATH, "HOME=" + c.root, "LANG=C.UTF-8", "TZ=Europe/Paris", "CAIRN_TEST_PASS=passed", "CAIRN_TEST_OTHER=not-listed"}
	code, out, errs := c.child(launchEnv, "run", "--detach", "envcheck")
	id := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(id, "run_") {
		t.Fatalf("run --detach: exit %d %q %q", code, out, errs)
	}
	c.waitFor("the run to ask", func() bool { return c.show(id).Status == store.RunWaiting })
	// Nobody with the launch's environment is left to resume it.
	c.stopWorker()

	code, out, errs = c.child([]string{"PATH=/usr/bin:/bin"}, "answer", id, "yes")
	if code != 0 || !strings.Contains(errs, "started a background worker") {
		t.Fatalf("answer: exit %d %q %q; want it to say it started a worker", code, out, errs)
	}
	c.waitFor("the run to settle", func() bool { return c.show(id).Status.Settled() })
	r := c.show(id)
	var got string
	_ = json.Unmarshal(r.Result, &got)
	want := launchPATH + "|" + c.root + "|C.UTF-8|Europe/Paris|passed|unset"
	if r.Status != store.RunSucceeded || got != want {
		t.Fatalf("run %s %s (%s): the step after the answer saw %q, want %q\njournal:\n%s", id, r.Status, r.Error, got, want, c.journal(id))
	}
}
