package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// Leases mode (coordination.mode: leases) forced on SQLite: peers that
// share one database coordinate as peers on several machines must, with
// store leases instead of lock files. Short leases keep the tests fast.

const leaseYAML = "coordination:\n  mode: leases\n  lease: 3s\n  renew: 500ms\n"

// gatedStepYAML logs the start and end of its step around a wait for the
// file go; it is safe to repeat, so an adopter that did not see its live
// supervisor would start it again and the log would show it.
const gatedStepYAML = `
steps:
  - id: gated
    safe_to_repeat: true
    shell: |
      echo "start $$" >> steps.log
      touch ready
      while [ ! -e go ]; do sleep 0.05; done
      echo "end $$" >> steps.log
  - id: after
    exec: [echo, after]
`

// newLeaseWS is a workspace in leases mode, its database made, and a
// read-only store on it.
func newLeaseWS(t *testing.T, files map[string]string) (*cliWS, *leaseView) {
	t.Helper()
	c := newCLIWS(t, files)
	if err := os.WriteFile(filepath.Join(c.root, ".cairn", "config.yaml"), []byte(leaseYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	c.openStore().Close()
	return c, &leaseView{t: t, st: openReadOnly(t, c)}
}

type leaseView struct {
	t  *testing.T
	st store.Store
}

// lease returns a lease as stored (zero when never taken).
func (v *leaseView) lease(name string) store.Lease {
	v.t.Helper()
	l, err := v.st.GetLease(context.Background(), name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		v.t.Fatal(err)
	}
	return l
}

// held reports whether a lease is current now.
func (v *leaseView) held(name string) bool {
	l := v.lease(name)
	return l.Held(time.Now())
}

var runIDPattern = regexp.MustCompile(`run_[0-9a-z]+`)

// detach launches target queued, for a peer to execute.
func (c *cliWS) detach(target string) string {
	c.t.Helper()
	code, out, errs := c.run("run", "--detach", target)
	id := runIDPattern.FindString(out)
	if code != 0 || id == "" {
		c.t.Fatalf("run --detach %s: exit %d %q %q", target, code, out, errs)
	}
	return id
}

func (c *cliWS) file(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.root, name))
	return string(b)
}

func (c *cliWS) touch(t *testing.T, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(c.root, name), nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A host SIGKILLed during a supervised step: its run lease expires, the
// other host adopts the run (not before the lease's expiry), takes the
// step's result from its supervisor, which lived on, and finishes the
// run. The step ran once: its start and end are logged once. Once: the
// step ends while nobody owns the run; live: it still runs when the
// adopter comes, and the adopter sees its supervisor's live step lease
// and waits instead of starting it again.
func TestLeasesKilledOwnersRunIsAdoptedAndItsStepRunsOnce(t *testing.T) {
	for _, tc := range []struct {
		name       string
		endsBefore bool // the step ends before the adoption
	}{
		{"step ends while nobody owns the run", true},
		{"step still running under its supervisor", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, v := newLeaseWS(t, map[string]string{"gated.yaml": gatedStepYAML})
			t.Cleanup(func() { c.touch(t, "go") }) // no step left waiting
			a := c.startPeer("worker", "--idle", "0")
			within(t, 30*time.Second, "the worker takes the worker duty", func() bool { return v.lease("worker").PID == a.pid() })
			id := c.detach("gated")
			within(t, 30*time.Second, "the step starts under the worker", func() bool { return fileExists(c, "ready") })
			if l := v.lease("run:" + id); l.PID != a.pid() || !l.Held(time.Now()) {
				t.Fatalf("run lease with the step running: %+v, want held by the worker %d", l, a.pid())
			}
			b := c.startPeer("serve")
			within(t, 30*time.Second, "serve is up", func() bool { return strings.Contains(b.log(), "serving MCP over stdio") })

			// Read before the kill: a later renewal only moves the expiry on.
			last := v.lease("run:" + id)
			a.signal(t, syscall.SIGKILL)
			_ = a.Cmd.Wait()
			step := v.lease("step:" + id)
			if !step.Held(time.Now()) || step.PID == a.pid() || step.PID == b.pid() || !processAlive(step.PID) {
				t.Fatalf("step lease after the owner's death: %+v; want held by its live supervisor", step)
			}
			if tc.endsBefore {
				c.touch(t, "go")
				within(t, 30*time.Second, "the step ends under its supervisor", func() bool { return !v.held("step:" + id) })
			}
			within(t, 30*time.Second, "serve adopts the run", func() bool { return v.lease("run:"+id).PID == b.pid() })
			if got := v.lease("run:" + id); got.Since.Before(last.Expires) {
				t.Fatalf("adopted at %s, before the dead owner's lease expired at %s", got.Since, last.Expires)
			}
			if !tc.endsBefore {
				within(t, 30*time.Second, "serve re-attaches to the step", func() bool {
					return strings.Contains(c.journal(id), fmt.Sprintf("pid %d re-attached to step gated", b.pid()))
				})
				if n := strings.Count(c.file("steps.log"), "start"); n != 1 {
					t.Fatalf("the step started %d times before it ended:\n%s", n, c.file("steps.log"))
				}
				c.touch(t, "go")
			}
			c.waitFor("the run to settle", func() bool { return c.show(id).Status.Settled() })
			r := c.show(id)
			if r.Status != store.RunSucceeded || r.OwnerPID != b.pid() {
				t.Fatalf("run %s: %s (owner %d) %s; want succeeded under serve %d", id, r.Status, r.OwnerPID, r.Error, b.pid())
			}
			log := strings.Fields(c.file("steps.log"))
			if len(log) != 4 || log[0] != "start" || log[2] != "end" || log[1] != log[3] {
				t.Fatalf("the step's log is not one start and its end:\n%s", c.file("steps.log"))
			}
			if !strings.Contains(c.journal(id), "took the result step gated's supervisor recorded") {
				t.Fatalf("the adopter did not take the supervisor's result:\n%s", c.journal(id))
			}
			// Settled, the run's leases are forgotten: no row per run stays.
			within(t, 30*time.Second, "the settled run's leases are forgotten", func() bool {
				return v.lease("run:"+id).Name == "" && v.lease("step:"+id).Name == ""
			})
		})
	}
}

func fileExists(c *cliWS, name string) bool {
	_, err := os.Stat(filepath.Join(c.root, name))
	return err == nil
}

const longStepYAML = `
steps:
  - id: long
    exec: [sleep, "60"]
`

// A cancel recorded in the store by another host reaches the step running
// under the owning host within a second, and the run settles cancelled.
func TestLeasesCancelFromAnotherHostReachesTheStep(t *testing.T) {
	t.Parallel()
	c, v := newLeaseWS(t, map[string]string{"long.yaml": longStepYAML})
	a := c.startPeer("worker", "--idle", "0")
	within(t, 30*time.Second, "the worker takes the worker duty", func() bool { return v.lease("worker").PID == a.pid() })
	id := c.detach("long")
	var step int
	within(t, 30*time.Second, "the step starts", func() bool { step = processWithEnv("CAIRN_RUN_ID=" + id); return step != 0 })
	t.Cleanup(func() { _ = syscall.Kill(step, syscall.SIGKILL) })
	// The cancel is recorded in the store by this process, as a host on
	// another machine records it (Engine.Cancel in leases mode signals no
	// pid): only the store carries it to the owner and the supervisor.
	other, err := sqlite.Open(context.Background(), c.ws.DBPath(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	began := time.Now()
	if _, err := other.CancelRun(context.Background(), id, "cancelled from another host"); err != nil {
		t.Fatal(err)
	}
	bound := time.Second
	if raceEnabled {
		bound *= 2 // race-instrumented peers on a loaded machine
	}
	within(t, bound, "the step's process ends after the cancel", func() bool { return !processAlive(step) })
	t.Logf("the step ended %s after the cancel was requested", time.Since(began).Round(time.Millisecond))
	c.waitFor("the run to settle", func() bool { return c.show(id).Status.Settled() })
	if r := c.show(id); r.Status != store.RunCancelled {
		t.Fatalf("run %s: %s %s", id, r.Status, r.Error)
	}
}

// Lease-only duties: the worker that does the scheduler and worker duties
// is stopped (SIGSTOP); once the leases expire the scheduler moves to a
// live peer (serve or a new worker) and the worker duty to the new worker; no lock file is ever held.
// status lists the live peers, and not the stopped one once its
// registration expired.
func TestLeasesDutiesMoveFromAStoppedHolderAndStatusListsPeers(t *testing.T) {
	t.Parallel()
	c, v := newLeaseWS(t, cliFiles(t))
	a := c.startPeer("worker", "--idle", "0")
	within(t, 30*time.Second, "the worker leads", func() bool {
		return v.lease("worker").PID == a.pid() && v.lease("scheduler").PID == a.pid()
	})
	b := c.startPeer("serve")
	within(t, 30*time.Second, "serve is up", func() bool { return strings.Contains(b.log(), "serving MCP over stdio") })
	peerLine := func(out string, pid int) bool {
		return strings.Contains(out, fmt.Sprintf("  peer        %s pid %d since ", locks.Hostname(), pid))
	}
	code, out, _ := c.run("status")
	if code != 0 || !peerLine(out, a.pid()) || !peerLine(out, b.pid()) {
		t.Fatalf("status does not list both peers (%d, %d): exit %d\n%s", a.pid(), b.pid(), code, out)
	}

	a.stopOutsideAWrite(t, c.ws.DBPath())
	stopped := time.Now()
	w := c.startPeer("worker", "--idle", "0")
	bound := 10 * time.Second
	if raceEnabled {
		bound *= 2
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("scheduler %+v worker %+v (serve %d, new worker %d)\nserve log:\n%s\nnew worker log:\n%s\nstopped worker log:\n%s", v.lease("scheduler"), v.lease("worker"), b.pid(), w.pid(), b.log(), w.log(), a.log())
		}
	})
	within(t, bound, "the duties move", func() bool {
		sched := v.lease("scheduler").PID // either live peer may win it
		return (sched == b.pid() || sched == w.pid()) && v.lease("worker").PID == w.pid()
	})
	t.Logf("duties moved %s after the holder was stopped", time.Since(stopped).Round(10*time.Millisecond))
	for _, name := range []string{"scheduler", "worker"} {
		if _, held, err := locks.Describe(c.ws.LocksDir(), name); err != nil || held {
			t.Fatalf("lock file %s held (%v) in lease-only mode", name, err)
		}
	}
	within(t, bound, "status drops the stopped peer", func() bool {
		code, out, _ = c.run("status")
		return code == 0 && !peerLine(out, a.pid()) && peerLine(out, b.pid()) && peerLine(out, w.pid())
	})
	a.signal(t, syscall.SIGCONT)
	within(t, bound, "the woken worker notices it lost its leases", func() bool {
		return strings.Contains(a.log(), "lost its lease")
	})
}

// In leases mode a cancel reaches the step of a frozen owner too: the
// owning worker is stopped (SIGSTOP, outside a write) while its step
// runs; `mcp-host cancel` records the cancel in the store, where the
// step's supervisor reads it and stops the command, the owner frozen
// all along. Thawed, the owner (or its successor) settles the run
// cancelled.
func TestLeasesCancelReachesTheStepOfAFrozenOwner(t *testing.T) {
	t.Parallel()
	c, v := newLeaseWS(t, map[string]string{"long.yaml": longStepYAML})
	a := c.startPeer("worker", "--idle", "0")
	within(t, 30*time.Second, "the worker takes the worker duty", func() bool { return v.lease("worker").PID == a.pid() })
	id := c.detach("long")
	var step int
	within(t, 30*time.Second, "the step starts", func() bool { step = processWithEnv("CAIRN_RUN_ID=" + id); return step != 0 })
	t.Cleanup(func() { _ = syscall.Kill(step, syscall.SIGKILL) })
	a.stopOutsideAWrite(t, c.ws.DBPath())
	if code, out, errs := c.run("cancel", "--wait", "0", id); code != 0 {
		t.Fatalf("cancel: exit %d %s %s", code, out, errs)
	}
	within(t, 30*time.Second, "the step's process ends after the cancel", func() bool { return !processAlive(step) })
	if !locks.Stopped(a.pid()) {
		t.Fatal("the owner ran meanwhile")
	}
	a.signal(t, syscall.SIGCONT)
	c.waitFor("the run to settle", func() bool { return c.show(id).Status.Settled() })
	if r := c.show(id); r.Status != store.RunCancelled || r.Steps[0].Status != runs.StepCancelled {
		t.Fatalf("run %s: %s (step %s) %s\nworker log:\n%s", id, r.Status, r.Steps[0].Status, r.Error, a.log())
	}
}

// In leases mode a step's supervisor that cannot renew its step lease
// (here every write to the database waits: this test holds its write
// lock) kills its command once the lease lapsed, before any peer could
// take the step over and start it again, and records no result: when the
// database is back, the interrupted step (not safe to repeat) asks.
func TestLeasesSupervisorStopsItsCommandWhenItsLeaseLapses(t *testing.T) {
	t.Parallel()
	c, v := newLeaseWS(t, map[string]string{"long.yaml": longStepYAML})
	a := c.startPeer("worker", "--idle", "0")
	within(t, 30*time.Second, "the worker takes the worker duty", func() bool { return v.lease("worker").PID == a.pid() })
	id := c.detach("long")
	var step int
	within(t, 30*time.Second, "the step starts", func() bool { step = processWithEnv("CAIRN_RUN_ID=" + id); return step != 0 })
	t.Cleanup(func() { _ = syscall.Kill(step, syscall.SIGKILL) })
	supervisor := v.lease("step:" + id).PID

	db, err := sql.Open("sqlite", c.ws.DBPath())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 30000"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	locked := time.Now()
	within(t, 30*time.Second, "the step's process ends while its supervisor cannot renew its lease", func() bool { return !processAlive(step) })
	t.Logf("the step ended %s after the database's write lock was taken (lease 3s)", time.Since(locked).Round(10*time.Millisecond))
	if !processAlive(a.pid()) {
		t.Fatalf("the worker died:\n%s", a.log())
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the run to ask about the interrupted step", func() bool {
		r := c.show(id)
		return r.Status == store.RunWaiting && r.Question != nil
	})
	if r := c.show(id); r.Question.Kind != "ambiguous" || r.Question.Step != "long" {
		t.Fatalf("run %s asks %+v", id, r.Question)
	}
	j := c.journal(id)
	if !strings.Contains(j, fmt.Sprintf("step supervisor pid %d ended without a result", supervisor)) || !strings.Contains(j, "not renewed for 3s") {
		t.Fatalf("the journal does not say the supervisor stopped for its lease:\n%s", j)
	}
	if code, out, errs := c.run("cancel", id); code != 0 {
		t.Fatalf("cancel: exit %d %s %s", code, out, errs)
	}
}

// A step's supervisor stopped (SIGSTOP) past its lease, whose lease
// nobody took meanwhile, renews it when it runs again and lets its
// command go on: the step runs once and the run succeeds.
func TestLeasesStoppedSupervisorWhoseLeaseNobodyTookGoesOn(t *testing.T) {
	t.Parallel()
	c, v := newLeaseWS(t, map[string]string{"gated.yaml": gatedStepYAML})
	t.Cleanup(func() { c.touch(t, "go") })
	a := c.startPeer("worker", "--idle", "0")
	within(t, 30*time.Second, "the worker takes the worker duty", func() bool { return v.lease("worker").PID == a.pid() })
	id := c.detach("gated")
	within(t, 30*time.Second, "the step starts", func() bool { return fileExists(c, "ready") })
	sup := v.lease("step:" + id).PID
	if sup == 0 || sup == a.pid() || !processAlive(sup) {
		t.Fatalf("step lease: %+v", v.lease("step:"+id))
	}
	if err := syscall.Kill(sup, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(sup, syscall.SIGCONT) })
	within(t, 30*time.Second, "the stopped supervisor's lease lapses", func() bool { return !v.held("step:" + id) })
	if err := syscall.Kill(sup, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	within(t, 30*time.Second, "the supervisor renews its lease", func() bool { return v.lease("step:"+id).PID == sup && v.held("step:"+id) })
	c.touch(t, "go")
	c.waitFor("the run to settle", func() bool { return c.show(id).Status.Settled() })
	if r := c.show(id); r.Status != store.RunSucceeded {
		t.Fatalf("run %s: %s %s\n%s", id, r.Status, r.Error, c.journal(id))
	}
	log := strings.Fields(c.file("steps.log"))
	if len(log) != 4 || log[0] != "start" || log[2] != "end" || log[1] != log[3] {
		t.Fatalf("the step's log is not one start and its end:\n%s", c.file("steps.log"))
	}
}

// In leases mode too, a run whose owner was SIGKILLed with no peer alive
// says so in runs show and status once the owner's lease expired, while
// its step goes on under its supervisor.
func TestLeasesRunsShowOwnerGone(t *testing.T) {
	t.Parallel()
	c, v := newLeaseWS(t, map[string]string{"long.yaml": longStepYAML})
	a := c.startPeer("worker", "--idle", "0")
	within(t, 30*time.Second, "the worker takes the worker duty", func() bool { return v.lease("worker").PID == a.pid() })
	id := c.detach("long")
	var step int
	within(t, 30*time.Second, "the step starts", func() bool { step = processWithEnv("CAIRN_RUN_ID=" + id); return step != 0 })
	t.Cleanup(func() { _ = syscall.Kill(step, syscall.SIGKILL) })
	if r := c.show(id); r.Stalled != "" {
		t.Fatalf("a run whose owner lives is shown stalled: %q", r.Stalled)
	}
	a.signal(t, syscall.SIGKILL)
	_ = a.Cmd.Wait()
	want := fmt.Sprintf("owner pid %d gone since ", a.pid())
	c.waitFor("the owner's lease to expire", func() bool { return strings.Contains(c.show(id).Stalled, want) })
	if r := c.show(id); r.Status != store.RunRunning || !strings.Contains(r.Stalled, "waiting for a peer") || !strings.Contains(r.Stalled, "no mcp-host worker is alive") {
		t.Fatalf("runs show --json: %s, stalled %q", r.Status, r.Stalled)
	}
	if !processAlive(step) {
		t.Fatal("the step did not outlive its owner")
	}
	for _, args := range [][]string{{"runs", "show", id}, {"status"}} {
		if code, out, errs := c.run(args...); code != 0 || !strings.Contains(out, want) {
			t.Errorf("%v: exit %d; does not say the owner is gone:\n%s%s", args, code, out, errs)
		}
	}
}
