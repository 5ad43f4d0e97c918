package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/reexec"
	"github.com/cairnhq/cairn/internal/stuckwriter"
	"github.com/cairnhq/cairn/internal/syncbuf"
	"github.com/cairnhq/cairn/internal/tmpfs"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workspace"
)

// startMCPHost starts this test binary as a real mcp-host child process
// in c's workspace.
func (c *cliWS) startMCPHost(stderr *syncbuf.Buffer, args ...string) *reexec.Child {
	c.t.Helper()
	return reexec.Start(c.t, reexec.Params{
		Args:   append([]string{"--state", c.state, "--workspace", c.root, "--log-level", "info"}, args...),
		Env:    []string{"CAIRN_CLI_MAIN=1"},
		Stderr: stderr,
	})
}

// waitExit waits for a child to end and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, within time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(within):
		t.Fatalf("pid %d did not exit within %s", cmd.Process.Pid, within)
		return -1
	}
}

// TestWorkerResumesAfterDiskFull fills the state disk (a 4 MB tmpfs) under
// a real worker firing an every-1s automation, then frees it, in both
// coordination modes: the worker pauses writing, lets go of the scheduler
// and worker duties (their lock files are free), new work is refused
// naming the disk, status
// says the disk is full; fires resume soon after the space is back, the
// worker takes its duties again, no slot fires twice, every run that
// executed is stored and the database is sound.
func TestWorkerResumesAfterDiskFull(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"locks", "leases"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			workerResumesAfterDiskFull(t, mode)
		})
	}
}

func workerResumesAfterDiskFull(t *testing.T, mode string) {
	disk := tmpfs.Mount(t, "4m")
	c := newCLIWS(t, map[string]string{"tick.yaml": `
steps:
  - id: mark
    shell: 'echo "$CAIRN_RUN_ID" >> ticks.txt'
`})
	c.onDisk(disk, mode)
	ticks := func() []string {
		b, _ := os.ReadFile(filepath.Join(c.root, "ticks.txt"))
		return strings.Fields(string(b))
	}
	// overlap allow: a run whose step ended on the full disk has no
	// recorded result, and parks on the question whether to run the step
	// again (it is not safe to repeat); with overlap skip that question
	// would hold the automation back until someone answers it.
	if code, _, errs := c.run("automations", "create", "--key", "tick", "--target", "tick", "--every", "1s", "--overlap", "allow"); code != 0 {
		t.Fatalf("automations create: exit %d %s", code, errs)
	}
	var stderr syncbuf.Buffer
	worker := c.startMCPHost(&stderr, "worker", "--idle", "0")
	pid := worker.Cmd.Process.Pid
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker log:\n%s", stderr.String())
		}
	})
	c.waitFor("two fires before the disk fills", func() bool { return len(ticks()) >= 2 })
	view := openReadOnly(t, c)
	doing := func(name string) bool {
		d := c.dutyDoer(view, name)
		return d.Done() && d.Doer == pid
	}
	c.waitFor("the worker to do both duties", func() bool { return doing("scheduler") && doing("worker") })

	fill := filepath.Join(disk, "fill")
	tmpfs.Fill(t, fill)
	full := "state disk full: free space on " + c.ws.StateDir + "; Cairn resumes by itself"
	c.waitFor("the worker to pause writing", func() bool { return strings.Contains(stderr.String(), full) })
	// Its duties go: the lock files at once (a lease, whose release is a
	// write, expires; a full disk is not all or nothing: a small write
	// that fits in the WAL's room may commit, the store resumes and takes
	// its leases again, so their state is not asserted here).
	for _, want := range []string{"scheduler released", "worker duty released"} {
		c.waitFor("the worker to log "+want, func() bool { return strings.Contains(stderr.String(), want) })
	}
	if mode == "locks" {
		c.waitFor("the lock files to be free", func() bool {
			for _, name := range []string{"scheduler", "worker"} {
				if h, held, err := locks.Describe(c.ws.LocksDir(), name); err != nil || held && h.PID == pid {
					return false
				}
			}
			return true
		})
	}
	code, out, _ := c.run("status")
	if code != 0 || !strings.Contains(out, "state disk  the state disk has ") || !strings.Contains(out, " KB free (under ") || !strings.Contains(out, "new runs and fires are refused") {
		t.Errorf("status on a full disk: exit %d:\n%s", code, out)
	}
	t.Logf("status on the full disk:\n%s", out)
	code, out, errs := c.run("run", "--detach", "tick")
	if code == 0 || !strings.Contains(errs, c.ws.StateDir) || !strings.Contains(errs, "free space") {
		t.Errorf("run --detach on a full disk: exit %d %q %q", code, out, errs)
	}
	t.Logf("run --detach on the full disk: exit %d: %s", code, strings.TrimSpace(errs))
	before := len(ticks())
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	c.waitFor("a fire after the space was freed", func() bool { return len(ticks()) > before })
	resumedIn := time.Since(freed)
	t.Logf("%s: first fire %s after the space was freed", mode, resumedIn.Round(time.Millisecond))
	// A correctness bound with a wide margin (the issue asks for 5 s).
	if resumedIn > 15*time.Second {
		t.Errorf("fires resumed %s after the space was freed", resumedIn)
	}
	c.waitFor("the worker to do both duties again", func() bool { return doing("scheduler") && doing("worker") })
	c.waitFor("two more fires", func() bool { return len(ticks()) >= before+2 })
	if err := worker.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, worker.Cmd, 30*time.Second); code != 0 {
		t.Fatalf("worker exited %d:\n%s", code, stderr.String())
	}
	for _, want := range []string{"scheduler restarted", "worker duty taken again"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the worker's log does not say %q:\n%s", want, stderr.String())
		}
	}

	s := c.openStore()
	defer s.Close()
	ctx := context.Background()
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, id := range ticks() {
		if seen[id] {
			t.Errorf("run %s executed twice", id)
		}
		seen[id] = true
		if _, err := s.GetRun(ctx, id); err != nil {
			t.Errorf("run %s executed but is not stored: %v", id, err)
		}
		var fires int
		if err := s.Reader().QueryRow("SELECT count(*) FROM automation_fires WHERE run_id = ?", id).Scan(&fires); err != nil || fires != 1 {
			t.Errorf("run %s has %d fire rows (%v)", id, fires, err)
		}
	}
	var dup int
	if err := s.Reader().QueryRow("SELECT count(*) FROM (SELECT run_id FROM automation_fires WHERE run_id != '' GROUP BY run_id HAVING count(*) > 1)").Scan(&dup); err != nil || dup != 0 {
		t.Errorf("%d runs were queued by more than one fire (%v)", dup, err)
	}
	for nominal, rs := range firedRuns(t, s) {
		if len(rs) > 1 {
			t.Errorf("slot %s fired %d times", nominal.Format(time.RFC3339Nano), len(rs))
		}
		for _, r := range rs {
			if r.Status == store.RunWaiting {
				t.Logf("run %s (slot %s) waits for an answer: its step ended while the disk was full", r.ID, nominal.Format(time.RFC3339))
			}
		}
	}
}

// TestServeEndsWhenStateFolderDeleted deletes the state folder under a
// real serve: the next write is refused with an error naming the folder,
// and serve exits non-zero with it.
func TestServeEndsWhenStateFolderDeleted(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, nil)
	var stderr syncbuf.Buffer
	serve := c.startMCPHost(&stderr, "serve")
	send := func(line string) { serve.Say(t, line) }
	reply := func() map[string]any {
		for {
			var m map[string]any
			if err := json.Unmarshal([]byte(serve.Line(t)), &m); err != nil {
				t.Fatal(err)
			}
			if _, request := m["method"]; !request { // not the server's sync probe
				return m
			}
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(mcpLines()), "\n") {
		send(l)
	}
	reply()
	createSession := func(id string) (isError bool, text string) {
		send(`{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"create_session","arguments":{"session_id":"` + id + `"}}}`)
		b, _ := json.Marshal(reply()["result"])
		var r struct {
			IsError bool `json:"isError"`
		}
		_ = json.Unmarshal(b, &r)
		return r.IsError, string(b)
	}
	if isErr, text := createSession("before"); isErr {
		t.Fatalf("create_session before the deletion: %s", text)
	}
	if err := os.RemoveAll(c.ws.StateDir); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	isErr, text := createSession("after")
	if !isErr || !strings.Contains(text, c.ws.StateDir) {
		t.Fatalf("create_session after the deletion was not refused with the folder's name: %s", text)
	}
	code := waitExit(t, serve.Cmd, 30*time.Second)
	t.Logf("write refused and serve exited %s after the deletion", time.Since(deleted).Round(time.Millisecond))
	if code == 0 || !strings.Contains(stderr.String(), c.ws.StateDir) || !strings.Contains(stderr.String(), "vanished") {
		t.Fatalf("serve exited %d:\n%s", code, stderr.String())
	}
	// Nothing recreated the database behind the deletion.
	if _, err := os.Stat(c.ws.DBPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the deletion %s: %v", c.ws.DBPath(), err)
	}
}

// TestReadCommandsAnswerWhileAWriterIsStopped freezes (SIGSTOP) a process
// inside a write transaction: status, runs, sessions list and automations
// list, each a real mcp-host process, still answer.
func TestReadCommandsAnswerWhileAWriterIsStopped(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, cliFiles(t))
	if code, _, errs := c.run("sessions", "create", "chat"); code != 0 {
		t.Fatalf("sessions create: %s", errs)
	}
	holder := reexec.Start(t, reexec.Params{Args: []string{"-test.run=^$"}, Env: []string{stuckwriter.Env + "=" + c.ws.DBPath()}})
	if line := holder.Line(t); line != "holding" {
		t.Fatalf("holder said %q", line)
	}
	if err := holder.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer holder.Cmd.Process.Signal(syscall.SIGCONT)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"runs"}, {"sessions", "list"}, {"automations", "list"}} {
		cmd := exec.Command(exe, append([]string{"--state", c.state, "--workspace", c.root}, args...)...)
		cmd.Env = append(os.Environ(), "CAIRN_CLI_MAIN=1")
		start := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		t.Logf("%s answered in %s with a writer stopped", strings.Join(args, " "), took.Round(time.Millisecond))
		if err != nil {
			t.Errorf("%s with a writer stopped: %v\n%s", strings.Join(args, " "), err, out)
		}
		// A correctness bound with a wide margin (the issue asks for 1 s):
		// before, these waited for the write lock and failed after 10 s.
		if took > 8*time.Second {
			t.Errorf("%s took %s with a writer stopped", strings.Join(args, " "), took)
		}
	}
}

// TestStepEndingOnAFullDiskKeepsItsResult: a step fills the state disk
// (a 4 MB tmpfs) and ends: its supervisor cannot record the result, says
// it waits for the disk, and records it once space is freed, so the run
// goes on and succeeds with each step run once, instead of parking on
// the question whether the step ran.
func TestStepEndingOnAFullDiskKeepsItsResult(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"locks", "leases"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			stepEndingOnAFullDisk(t, mode)
		})
	}
}

// onDisk puts c's state folder on disk, in coordination mode ("locks",
// the default, or "leases").
func (c *cliWS) onDisk(disk, mode string) {
	c.t.Helper()
	if mode == "leases" {
		if err := os.WriteFile(filepath.Join(c.root, ".cairn", "config.yaml"), []byte(leaseYAML), 0o600); err != nil {
			c.t.Fatal(err)
		}
	}
	c.state = filepath.Join(disk, "state")
	ws, err := workspace.Resolve(c.root, c.root, c.state)
	if err != nil {
		c.t.Fatal(err)
	}
	c.ws = ws
}

func stepEndingOnAFullDisk(t *testing.T, mode string) {
	disk := tmpfs.Mount(t, "4m")
	fill := filepath.Join(disk, "fill")
	c := newCLIWS(t, map[string]string{"fill.yaml": `
steps:
  - id: fill
    shell: |
      echo "fill $$" >> ran.txt
      head -c 8000000 /dev/zero > '` + fill + `' 2>/dev/null || true
      touch filled
      while [ ! -e go ]; do sleep 0.05; done
  - id: after
    shell: 'echo after >> ran.txt'
`})
	c.onDisk(disk, mode)
	var stderr syncbuf.Buffer
	worker := c.startMCPHost(&stderr, "worker", "--idle", "0")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker log:\n%s", stderr.String())
		}
	})
	// The worker must hold its duty before the detach, or the detach
	// starts a worker of its own (logging to worker.log, not here).
	c.waitFor("the worker to open the store", func() bool {
		_, err := os.Stat(c.ws.DBPath())
		return err == nil
	})
	view := openReadOnly(t, c)
	c.waitFor("the worker to take the worker duty", func() bool {
		d := c.dutyDoer(view, "worker")
		return d.Done() && d.Doer == worker.Cmd.Process.Pid
	})
	id := c.detach("fill")
	c.waitFor("the step to fill the disk", func() bool { _, err := os.Stat(filepath.Join(c.root, "filled")); return err == nil })
	c.touch(t, "go")
	c.waitFor("the supervisor to say it waits for the disk", func() bool {
		return strings.Contains(stderr.String(), "step supervisor waits for the state disk")
	})
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	var (
		r   *store.Run
		err error
	)
	c.waitFor("the run to settle", func() bool {
		r, err = view.GetRun(context.Background(), id)
		return err == nil && (r.Status == store.RunSucceeded || r.Status == store.RunFailed || r.Status == store.RunWaiting || r.Status == store.RunCancelled)
	})
	if r.Status != store.RunSucceeded {
		t.Fatalf("run %s is %s after the space was freed", id, r.Status)
	}
	if ran := strings.Fields(c.file("ran.txt")); len(ran) != 3 || ran[0] != "fill" || ran[2] != "after" {
		t.Fatalf("steps ran: %q, want fill once, then after", ran)
	}
	if err := worker.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, worker.Cmd, 30*time.Second); code != 0 {
		t.Fatalf("worker exited %d", code)
	}
	s := c.openStore()
	defer s.Close()
	if err := s.IntegrityCheck(context.Background()); err != nil {
		t.Fatal(err)
	}
}
