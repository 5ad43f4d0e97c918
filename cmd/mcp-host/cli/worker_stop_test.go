package cli

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/locks"
)

// worker stop stops the workspace's background worker and says so, and
// says when there is none; status shows how to stop one; the worker's
// log has the run's lifecycle at the default level.
func TestWorkerStopCommand(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, cliFiles(t))
	if code, out, errs := c.run("worker", "stop"); code != 0 || out != "no worker runs for "+c.root+"\n" {
		t.Fatalf("worker stop with none: exit %d %q %q", code, out, errs)
	}
	code, out, errs := c.run("run", "long", "--detach")
	id := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(id, "run_") {
		t.Fatalf("run long --detach: exit %d %q %q", code, out, errs)
	}
	var pid int
	c.waitFor("the worker to take its lock", func() bool {
		h, held, _ := locks.Describe(c.ws.LocksDir(), "worker")
		pid = h.PID
		return held && pid != 0 && pid != os.Getpid()
	})
	c.waitFor("the worker to execute the run", func() bool {
		b, _ := os.ReadFile(c.ws.LogPath())
		return strings.Contains(string(b), `msg="run executing" run=`+id)
	})
	if code, out, _ := c.run("status"); code != 0 || !strings.Contains(out, "stop it: mcp-host worker stop --workspace "+c.root) {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
	code, out, errs = c.run("worker", "stop")
	if code != 0 || out != "stopped worker pid "+strconv.Itoa(pid)+" for "+c.root+"\n" {
		t.Fatalf("worker stop: exit %d %q %q", code, out, errs)
	}
	if _, held, _ := locks.Describe(c.ws.LocksDir(), "worker"); held {
		t.Fatal("locks/worker is still held after worker stop")
	}
	c.waitFor("the worker process to exit", func() bool { return !processAlive(pid) })
	if code, out, _ := c.run("worker", "stop"); code != 0 || !strings.HasPrefix(out, "no worker runs") {
		t.Fatalf("second worker stop: exit %d %q", code, out)
	}
}

// In leases mode the worker holds the store's worker lease and no lock
// file: worker stop finds it by the lease and its peer registration, stops
// it, and says there is none once it has gone; status shows how.
func TestWorkerStopInLeasesMode(t *testing.T) {
	t.Parallel()
	c, v := newLeaseWS(t, cliFiles(t))
	if code, out, errs := c.run("worker", "stop"); code != 0 || out != "no worker runs for "+c.root+"\n" {
		t.Fatalf("worker stop with none: exit %d %q %q", code, out, errs)
	}
	c.detach("long")
	var pid int
	c.waitFor("the worker to take the worker lease", func() bool {
		l := v.lease("worker")
		pid = l.PID
		return l.Held(time.Now()) && pid != 0 && pid != os.Getpid()
	})
	if _, held, _ := locks.Describe(c.ws.LocksDir(), "worker"); held {
		t.Fatal("a leases-mode worker holds locks/worker")
	}
	if code, out, _ := c.run("status"); code != 0 || !strings.Contains(out, "stop it: mcp-host worker stop --workspace "+c.root) {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
	code, out, errs := c.run("worker", "stop")
	if code != 0 || out != "stopped worker pid "+strconv.Itoa(pid)+" for "+c.root+"\n" {
		t.Fatalf("worker stop: exit %d %q %q", code, out, errs)
	}
	c.waitFor("the worker process to exit", func() bool { return !processAlive(pid) })
	if v.held("worker") && v.lease("worker").PID == pid {
		t.Fatal("the stopped worker still holds its lease")
	}
	if code, out, _ := c.run("worker", "stop"); code != 0 || !strings.HasPrefix(out, "no worker runs") {
		t.Fatalf("second worker stop: exit %d %q", code, out)
	}
}
