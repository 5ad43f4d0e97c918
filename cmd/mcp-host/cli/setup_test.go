package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/stuckwriter"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/workspace"
)

// runCLI runs mcp-host in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// TestMain lets the test binary stand in for mcp-host: a background worker
// started by `run --detach` or `answer` (os.Executable) runs Main.
func TestMain(m *testing.M) {
	if code, ok := stuckwriter.Main(); ok {
		os.Exit(code)
	}
	if os.Getenv("CAIRN_CLI_MAIN") == "1" && (len(os.Args) < 2 || !strings.HasPrefix(os.Args[1], "-test.")) {
		syscall.Umask(0o077)
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := Main(ctx, os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
		stop()
		os.Exit(code)
	}
	os.Setenv("CAIRN_CLI_MAIN", "1")
	// The race detector sleeps a second at exit by default; workers exit.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

// cliWS is a workspace with workflow files and its own state root.
type cliWS struct {
	t     *testing.T
	root  string
	state string
	ws    *workspace.Workspace
}

func newCLIWS(t *testing.T, files map[string]string) *cliWS {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, ".cairn", "workflows")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(t.TempDir(), "state")
	ws, err := workspace.Resolve(root, root, state)
	if err != nil {
		t.Fatal(err)
	}
	c := &cliWS{t: t, root: ws.Root, state: state, ws: ws}
	t.Cleanup(c.stopWorker)
	return c
}

// run runs mcp-host in-process in this workspace with stdin in.
func (c *cliWS) runIn(in string, args ...string) (int, string, string) {
	c.t.Helper()
	var out, errb bytes.Buffer
	args = append([]string{"--state", c.state, "--workspace", c.root}, args...)
	code := Main(context.Background(), args, Stdio{In: strings.NewReader(in), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func (c *cliWS) run(args ...string) (int, string, string) {
	c.t.Helper()
	return c.runIn("", args...)
}

// show returns a run as `runs show --json` prints it.
func (c *cliWS) show(id string) *runs.Run {
	c.t.Helper()
	code, out, errs := c.run("runs", "show", id, "--json")
	if code != 0 {
		c.t.Fatalf("runs show %s: exit %d: %s", id, code, errs)
	}
	var r runs.Run
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		c.t.Fatalf("runs show --json: %v\n%s", err, out)
	}
	return &r
}

// waitFor polls cond (a generous deadline, not an assertion of speed).
func (c *cliWS) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stopWorker stops the background workers of this workspace: the holder
// of locks/worker and, where /proc tells, any worker process of this state
// root still starting up (a command that started one returns at once, so
// the test may end before the worker takes its lock).
func (c *cliWS) stopWorker() {
	pids := workerPIDs(c.state)
	if h, held, err := locks.Describe(c.ws.LocksDir(), "worker"); err == nil && held && h.PID != 0 && h.PID != os.Getpid() && !slices.Contains(pids, h.PID) {
		pids = append(pids, h.PID)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for processAlive(pid) {
			if time.Now().After(deadline) {
				c.t.Errorf("worker pid %d did not stop", pid)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for time.Now().Before(deadline) {
		if _, held, _ := locks.Describe(c.ws.LocksDir(), "worker"); !held {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Errorf("locks/worker is still held")
}

// workerPIDs returns the processes running `worker` with state root
// state, as /proc shows them (none without /proc).
func workerPIDs(state string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		if slices.Contains(args, "worker") && slices.Index(args, state) > 0 && args[slices.Index(args, state)-1] == "--state" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// processAlive reports whether pid runs (a zombie has ended).
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil // no /proc: a zombie counts as alive
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// cliFiles are the workflows most tests' workspaces hold
// (testdata/workflows), by file name. It is read when a test asks, not
// when the binary starts: a worker child re-runs this binary elsewhere.
func cliFiles(t *testing.T) map[string]string {
	t.Helper()
	const dir = "testdata/workflows"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return files
}

// openStore prepares the workspace's state folder and opens its store,
// for a test to fill before it runs commands. The caller closes it.
func (c *cliWS) openStore() *sqlite.Store {
	c.t.Helper()
	if err := c.ws.Prepare(); err != nil {
		c.t.Fatal(err)
	}
	s, err := sqlite.Open(context.Background(), c.ws.DBPath(), sqlite.Options{})
	if err != nil {
		c.t.Fatal(err)
	}
	return s
}
