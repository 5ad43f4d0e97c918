package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

// A worker told to stop while a step of an adopted run is in flight
// releases the run for the next peer and exits, leaving the step to its
// supervisor (its process goes on); a cancel from another process then
// reaches the step through its supervisor.
func TestWorkerStopLeavesAStepToItsSupervisor(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("needs /proc to find the step's process")
	}
	c := newCLIWS(t, cliFiles(t))
	code, out, errs := c.run("run", "long", "--detach")
	id := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(id, "run_") {
		t.Fatalf("run long --detach: exit %d %q %q", code, out, errs)
	}
	var step int
	c.waitFor("the long step to start", func() bool {
		step = processWithEnv("CAIRN_RUN_ID=" + id)
		return step != 0
	})
	h, held, err := locks.Describe(c.ws.LocksDir(), "worker")
	if err != nil || !held || h.PID == 0 || h.PID == os.Getpid() {
		t.Fatalf("no background worker: %v %v %+v", err, held, h)
	}
	if err := syscall.Kill(h.PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the worker to exit", func() bool {
		_, held, _ := locks.Describe(c.ws.LocksDir(), "worker")
		return !held
	})
	if err := syscall.Kill(step, 0); err != nil {
		t.Fatalf("the step's process %d did not survive the worker's stop: %v", step, err)
	}
	r := c.show(id)
	if r.Status != store.RunRunning || r.OwnerPID != 0 {
		t.Fatalf("after the worker stopped: %s, owner %d; want running, released", r.Status, r.OwnerPID)
	}
	if !strings.Contains(c.journal(id), "released by pid "+strconv.Itoa(h.PID)) {
		t.Fatalf("the journal does not say the worker released the run:\n%s", c.journal(id))
	}
	if code, out, errs := c.run("cancel", id); code != 0 {
		t.Fatalf("cancel: exit %d %q %q", code, out, errs)
	}
	c.waitFor("the step's process to go", func() bool { return processWithEnv("CAIRN_RUN_ID="+id) == 0 })
	if r := c.show(id); r.Status != store.RunCancelled {
		t.Fatalf("after the cancel: %s", r.Status)
	}
}

// journal returns a run's journal file.
func (c *cliWS) journal(id string) string {
	c.t.Helper()
	b, _ := os.ReadFile(filepath.Join(c.ws.OutputDir(), id+".jsonl"))
	return string(b)
}

// processWithEnv returns the pid of a process whose environment holds kv,
// or 0.
func processWithEnv(kv string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, v := range bytes.Split(b, []byte{0}) {
			if string(v) == kv {
				return pid
			}
		}
	}
	return 0
}
