package cli

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"
)

// outputs runs mcp-host on m to its end and returns its exit code, stdout
// and stderr.
func (m *machine) outputs(args ...string) (int, string, string) {
	m.t.Helper()
	var out, errb bytes.Buffer
	cmd := m.command(args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		code = cmd.ProcessState.ExitCode()
	}
	return code, out.String(), errb.String()
}

// TestSharedSchedulerLeaseAndWorkerStop: on a shared store (leases mode,
// no lock files), automations create on one machine warns while no
// process of any machine does the scheduler duty, and not once another
// machine's worker leads it; worker stop finds a worker by the store's
// worker lease and stops it.
func TestSharedSchedulerLeaseAndWorkerStop(t *testing.T) {
	t.Parallel()
	ms := newLeaseMachines(t, 2, cliFiles(t))
	a, b := ms[0], ms[1]
	code, out, errs := b.outputs("automations", "create", "--key", "morning", "--target", "ok", "--cron", "0 9 * * *", "--tz", "Europe/Paris")
	if code != 0 || !parisNine.MatchString(out) || !strings.Contains(errs, "warning: no mcp-host process") {
		t.Fatalf("create with nothing running: exit %d\n%s\n%s", code, out, errs)
	}
	st := a.openStore()
	w := a.startPeer("worker", "--idle", "0")
	within(t, 30*time.Second, "a's worker leads the scheduler", func() bool {
		l := leaseOf(t, st, "scheduler")
		return l.PID == w.pid() && l.Held(time.Now())
	})
	within(t, 30*time.Second, "a's worker takes the worker duty", func() bool {
		l := leaseOf(t, st, "worker")
		return l.PID == w.pid() && l.Held(time.Now())
	})
	code, out, errs = b.outputs("automations", "update", "morning", "--cron", "30 9 * * *")
	if code != 0 || !strings.Contains(out, "09:30:00 CE") || strings.Contains(errs, "warning") {
		t.Fatalf("update with a's worker leading: exit %d\n%s\n%s", code, out, errs)
	}
	// The machines of this test share a hostname, so b reaches a's worker.
	code, out, errs = b.outputs("worker", "stop")
	if code != 0 || out != "stopped worker pid "+strconv.Itoa(w.pid())+" for "+b.root+"\n" {
		t.Fatalf("worker stop: exit %d %q %q", code, out, errs)
	}
	if err := w.Cmd.Wait(); err != nil {
		t.Fatalf("the stopped worker: %v\n%s", err, w.log())
	}
}
