package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/postgres"
)

// Several machines end to end: separate workspace folders and state roots
// stand for the machines, one PostgreSQL database and one workspace_id
// join them, and the hosts are real processes (this test binary standing
// in for mcp-host). A shared store coordinates with leases; short ones
// keep the tests fast.

const sharedLeaseYAML = "coordination:\n  lease: 2s\n  renew: 400ms\n"

// newLeaseMachines is newMachines with short leases.
func newLeaseMachines(t *testing.T, n int, workflows map[string]string) []*machine {
	t.Helper()
	ms := newMachines(t, n, workflows)
	for _, m := range ms {
		f, err := os.OpenFile(filepath.Join(m.root, ".cairn", "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString(sharedLeaseYAML)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return ms
}

// startPeer starts `mcp-host <args>` on m, its stderr in a file; it is
// killed when the test ends.
func (m *machine) startPeer(args ...string) *peer {
	m.t.Helper()
	return startPeerAt(m.t, m.state, m.root, args...)
}

// openStore opens the machines' shared store, as a host there does.
func (m *machine) openStore() *postgres.Store {
	m.t.Helper()
	st, err := postgres.Open(context.Background(), postgres.Config{URL: m.url, WorkspaceID: m.wsID, MaxConns: 2})
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { st.Close() })
	return st
}

// show returns a run as `runs show --json` on m prints it.
func (m *machine) show(id string) *runs.Run {
	m.t.Helper()
	var r runs.Run
	if out := m.output("runs", "show", id, "--json"); json.Unmarshal([]byte(out), &r) != nil {
		m.t.Fatalf("runs show --json: %s", out)
	}
	return &r
}

// leaseOf returns a lease as stored (zero when never taken).
func leaseOf(t *testing.T, st store.LeaseStore, name string) store.Lease {
	t.Helper()
	l, err := st.GetLease(context.Background(), name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return l
}

// sharedGatedYAML logs the start and end of its step in dir around a wait
// for dir/go; safe to repeat, so an adopter that did not see the live
// supervisor would start it again and the log would show it.
const sharedGatedYAML = `
input:
  dir: {type: string}
steps:
  - id: gated
    safe_to_repeat: true
    shell: |
      echo "start $$" >> "$DIR/steps.log"
      touch "$DIR/ready"
      while [ ! -e "$DIR/go" ]; do sleep 0.05; done
      echo "end $$" >> "$DIR/steps.log"
    env: {DIR: "${{ input.dir }}"}
  - id: after
    exec: [echo, after]
`

// TestSharedKilledHostsRunIsAdoptedAndItsStepRunsOnce: machine a's worker
// runs a supervised step; it is SIGKILLed, its run lease expires, and
// machine b's serve adopts the run (not before the expiry), takes the
// step's result from the supervisor that lived on (the step ended while
// nobody owned the run, or still runs when b comes and ends later), and
// finishes the run. The step started once: one start and its end.
func TestSharedKilledHostsRunIsAdoptedAndItsStepRunsOnce(t *testing.T) {
	for _, tc := range []struct {
		name       string
		endsBefore bool
	}{
		{"step ends while nobody owns the run", true},
		{"step still running under its supervisor", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ms := newLeaseMachines(t, 2, map[string]string{"gated.yaml": sharedGatedYAML})
			a, b := ms[0], ms[1]
			st := a.openStore()
			dir := t.TempDir()
			gate := func() {
				if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
					t.Error(err)
				}
			}
			t.Cleanup(gate) // no step left waiting
			readLog := func() string { s, _ := os.ReadFile(filepath.Join(dir, "steps.log")); return string(s) }

			w := a.startPeer("worker", "--idle", "0")
			within(t, 30*time.Second, "a's worker takes the worker duty", func() bool { return leaseOf(t, st, "worker").PID == w.pid() })
			input, _ := json.Marshal(map[string]string{"dir": dir})
			id := runIDPattern.FindString(a.output("run", "--detach", "gated", "--input", string(input)))
			within(t, 30*time.Second, "the step starts under a's worker", func() bool { _, err := os.Stat(filepath.Join(dir, "ready")); return err == nil })
			if l := leaseOf(t, st, "run:"+id); l.PID != w.pid() || !l.Held(time.Now()) {
				t.Fatalf("run lease with the step running: %+v, want held by a's worker %d", l, w.pid())
			}
			s := b.startPeer("serve")
			within(t, 30*time.Second, "b's serve is up", func() bool { return strings.Contains(s.log(), "serving MCP over stdio") })

			w.signal(t, syscall.SIGKILL)
			_ = w.Cmd.Wait()
			last := leaseOf(t, st, "run:"+id)
			if step := leaseOf(t, st, "step:"+id); !step.Held(time.Now()) || step.PID == w.pid() || !processAlive(step.PID) {
				t.Fatalf("step lease after a's worker died: %+v; want held by its live supervisor", step)
			}
			if tc.endsBefore {
				gate()
				within(t, 30*time.Second, "the step ends under its supervisor", func() bool { l := leaseOf(t, st, "step:"+id); return !l.Held(time.Now()) })
			}
			killed := time.Now()
			within(t, 30*time.Second, "b adopts the run", func() bool { return leaseOf(t, st, "run:"+id).PID == s.pid() })
			t.Logf("b adopted the run %s after a's worker was killed", time.Since(killed).Round(10*time.Millisecond))
			if got := leaseOf(t, st, "run:"+id); got.Since.Before(last.Expires) {
				t.Fatalf("adopted at %s, before the dead owner's lease expired at %s", got.Since, last.Expires)
			}
			if !tc.endsBefore {
				if n := strings.Count(readLog(), "start"); n != 1 {
					t.Fatalf("the step started %d times before it ended:\n%s", n, readLog())
				}
				gate()
			}
			deadline := time.Now().Add(60 * time.Second)
			r := b.show(id)
			for !r.Status.Settled() && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				r = b.show(id)
			}
			t.Logf("the run settled %s after a's worker was killed", time.Since(killed).Round(10*time.Millisecond))
			if r.Status != store.RunSucceeded || r.OwnerPID != s.pid() {
				t.Fatalf("run %s: %s (owner %d) %s; want succeeded under b's serve %d\nserve log:\n%s", id, r.Status, r.OwnerPID, r.Error, s.pid(), s.log())
			}
			log := strings.Fields(readLog())
			if len(log) != 4 || log[0] != "start" || log[2] != "end" || log[1] != log[3] {
				t.Fatalf("the step's log is not one start and its end:\n%s", readLog())
			}
		})
	}
}

// TestSharedCancelFromAnotherMachineReachesTheStep: `mcp-host cancel` on
// machine b, a separate process that can signal nothing of a's, reaches
// the step running under machine a's worker within a second (twice that
// under the race detector), through the store; the run settles cancelled.
func TestSharedCancelFromAnotherMachineReachesTheStep(t *testing.T) {
	t.Parallel()
	ms := newLeaseMachines(t, 2, map[string]string{"long.yaml": longStepYAML})
	a, b := ms[0], ms[1]
	st := a.openStore()
	w := a.startPeer("worker", "--idle", "0")
	within(t, 30*time.Second, "a's worker takes the worker duty", func() bool { return leaseOf(t, st, "worker").PID == w.pid() })
	id := runIDPattern.FindString(a.output("run", "--detach", "long"))
	var step int
	within(t, 30*time.Second, "the step starts", func() bool { step = processWithEnv("CAIRN_RUN_ID=" + id); return step != 0 })
	t.Cleanup(func() { _ = syscall.Kill(step, syscall.SIGKILL) })
	// Timed from when the cancel request is in the store (a's hosts
	// learn of it only there), as this process sees it, to the step's end.
	recorded, ended := make(chan time.Time, 1), make(chan time.Time, 1)
	go func() {
		for {
			cs, err := st.RunClaims(context.Background(), []string{id})
			if err == nil && len(cs) == 1 && cs[0].CancelRequested {
				recorded <- time.Now()
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		for processAlive(step) {
			time.Sleep(5 * time.Millisecond)
		}
		ended <- time.Now()
	}()
	b.output("cancel", "--wait", "0", id)
	var at, end time.Time
	select {
	case at = <-recorded:
	case <-time.After(30 * time.Second):
		t.Fatal("b's cancel is not in the store")
	}
	select {
	case end = <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the step goes on after b's cancel")
	}
	bound := time.Second
	if raceEnabled {
		bound *= 2 // race-instrumented peers on a loaded machine
	}
	if d := end.Sub(at); d > bound {
		t.Fatalf("the step ended %s after b's cancel was recorded; want within %s", d, bound)
	}
	t.Logf("the step ended %s after b's cancel was recorded", end.Sub(at).Round(time.Millisecond))
	deadline := time.Now().Add(60 * time.Second)
	r := b.show(id)
	for !r.Status.Settled() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		r = b.show(id)
	}
	if r.Status != store.RunCancelled {
		t.Fatalf("run %s: %s %s", id, r.Status, r.Error)
	}
}

// TestSharedStatusListsPeersOfEveryMachine: `mcp-host status` on machine c
// lists the live hosts of machines a and b (hostname, pid); a host that
// stopped is no longer listed.
func TestSharedStatusListsPeersOfEveryMachine(t *testing.T) {
	t.Parallel()
	ms := newLeaseMachines(t, 3, cliFiles(t))
	a, b, c := ms[0], ms[1], ms[2]
	st := a.openStore()
	w := a.startPeer("worker", "--idle", "0")
	within(t, 30*time.Second, "a's worker takes the worker duty", func() bool { return leaseOf(t, st, "worker").PID == w.pid() })
	s := b.startPeer("serve")
	within(t, 30*time.Second, "b's serve is up", func() bool { return strings.Contains(s.log(), "serving MCP over stdio") })
	peerLine := func(out string, pid int) bool {
		return strings.Contains(out, fmt.Sprintf("  peer        %s pid %d since ", locks.Hostname(), pid))
	}
	out := c.output("status")
	if !peerLine(out, w.pid()) || !peerLine(out, s.pid()) {
		t.Fatalf("c's status does not list a's worker %d and b's serve %d:\n%s", w.pid(), s.pid(), out)
	}
	s.signal(t, syscall.SIGTERM)
	_ = s.Cmd.Wait()
	within(t, 30*time.Second, "c's status drops b's stopped serve", func() bool {
		out = c.output("status")
		return peerLine(out, w.pid()) && !peerLine(out, s.pid())
	})
}

// napYAML is a run that costs no process: a sleep shorter than any park.
const napYAML = `
steps:
  - id: nap
    sleep: 1ms
`

// TestSharedSchedulerKilledEverySlotFiresOnce: three machines, 50
// automations every second at a fixed rate (overlap allow), a worker on
// one machine and serve on the two others. The host holding the scheduler
// duty is SIGKILLed midway; a live one takes the duty over once its lease
// expires and fires go on. In the database, every slot of every
// automation from its first to its last is accounted for exactly once:
// fired once (one run), or counted missed as the policy says (an overdue
// fixed-rate tick fires once, the ticks it passed are counted); no slot
// fired twice and none is off the one-second grid.
func TestSharedSchedulerKilledEverySlotFiresOnce(t *testing.T) {
	t.Parallel()
	ms := newLeaseMachines(t, 3, map[string]string{"nap.yaml": napYAML})
	st := ms[0].openStore()
	ctx := context.Background()
	const n = 50
	// Created through one host, as `automations create` does (fifty
	// commands would take longer than the test): the slots until the
	// hosts start are counted missed at their first fire.
	h, err := host.Open(ctx, host.Config{StateRoot: ms[0].state, Workspace: ms[0].root, Write: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := h.Automations.Create(ctx, automations.CreateParams{Owner: "human", Spec: automations.Spec{
			Key: fmt.Sprintf("beat-%02d", i), Target: "nap", Every: "1s", Overlap: "allow",
		}}); err != nil {
			t.Fatal(err)
		}
	}
	h.Close()
	autos := func() []*store.Automation {
		as, err := st.ListAutomations(ctx, store.AutomationFilter{})
		if err != nil || len(as) != n {
			t.Fatalf("automations: %d, %v", len(as), err)
		}
		return as
	}
	hosts := []*peer{ms[0].startPeer("worker", "--idle", "0"), ms[1].startPeer("serve"), ms[2].startPeer("serve")}
	var leader *peer
	within(t, 30*time.Second, "a host takes the scheduler duty", func() bool {
		l := leaseOf(t, st, "scheduler")
		for _, h := range hosts {
			if l.PID == h.pid() && l.Held(time.Now()) {
				leader = h
			}
		}
		return leader != nil
	})
	firedSince := func(at time.Time) bool {
		for _, a := range autos() {
			if !a.State.Cursor.After(at) {
				return false
			}
		}
		return true
	}
	started := time.Now()
	within(t, 60*time.Second, "every automation fires under the first leader", func() bool { return firedSince(started.Add(time.Second)) })
	leader.signal(t, syscall.SIGKILL)
	_ = leader.Cmd.Wait()
	killed := time.Now()
	within(t, 60*time.Second, "another host takes the scheduler duty", func() bool {
		l := leaseOf(t, st, "scheduler")
		return l.Held(time.Now()) && l.PID != leader.pid() && l.PID != 0
	})
	t.Logf("the scheduler duty moved %s after its holder was killed at %s", time.Since(killed).Round(10*time.Millisecond), killed.Format("15:04:05.000"))
	moved := time.Now()
	within(t, 60*time.Second, "every automation fires under the new leader", func() bool { return firedSince(moved.Add(2 * time.Second)) })
	for _, h := range hosts {
		if h != leader {
			h.signal(t, syscall.SIGTERM)
			_ = h.Cmd.Wait()
		}
	}
	// A serve hands its work to a worker it starts; that worker would go
	// on firing while the runs and the counters are read.
	for _, m := range ms {
		killStrays(t, m.state)
	}

	runsOf := map[string]map[time.Time]int{}
	for nominal, rs := range firedRuns(t, st) {
		for _, r := range rs {
			if runsOf[r.Trigger.AutomationID] == nil {
				runsOf[r.Trigger.AutomationID] = map[time.Time]int{}
			}
			runsOf[r.Trigger.AutomationID][nominal]++
		}
	}
	var fired, missed, windowMissed int64
	var lateGaps []string // slots missed outside the duty's move
	for _, a := range autos() {
		from := a.CreatedAt.Truncate(time.Second) // the fixed rate's origin (visitRate)
		slots := int64(a.State.Cursor.Sub(from) / time.Second)
		got := runsOf[a.ID]
		for nominal, k := range got {
			if k != 1 {
				t.Errorf("%s: slot %s fired %d times", a.Key, nominal.Format(time.RFC3339), k)
			}
			if d := nominal.Sub(from); d <= 0 || d%time.Second != 0 || nominal.After(a.State.Cursor) {
				t.Errorf("%s: fired slot %s is off the grid from %s to %s", a.Key, nominal.Format(time.RFC3339Nano), from.Format(time.RFC3339), a.State.Cursor.Format(time.RFC3339))
			}
		}
		if int64(len(got)) != a.State.Fires || a.State.Skipped != 0 || a.State.Fires+a.State.Missed != slots {
			t.Errorf("%s: %d slots from %s to %s; %d runs, %d fires, %d missed, %d skipped: a slot is unaccounted for or counted twice",
				a.Key, slots, from.Format(time.RFC3339), a.State.Cursor.Format(time.RFC3339), len(got), a.State.Fires, a.State.Missed, a.State.Skipped)
		}
		fired, missed = fired+a.State.Fires, missed+a.State.Missed
		nominals := slices.SortedFunc(maps.Keys(got), time.Time.Compare)
		for i := 1; i < len(nominals); i++ {
			gap := nominals[i].Sub(nominals[i-1])
			if gap == time.Second {
				continue
			}
			windowMissed += int64(gap/time.Second) - 1
			if nominals[i].Before(killed) || nominals[i-1].After(moved.Add(time.Second)) {
				lateGaps = append(lateGaps, fmt.Sprintf("%s %s..%s", a.Key, nominals[i-1].Format("15:04:05"), nominals[i].Format("15:04:05")))
			}
		}
	}
	t.Logf("%d automations: %d slots fired once each, %d counted missed (%d between the first fire and the last: the duty's move, late ticks)", n, fired, missed, windowMissed)
	if len(lateGaps) > 0 {
		t.Logf("slots missed away from the duty's move (ticks late by a second or more on this machine): %s", strings.Join(lateGaps, ", "))
	}
}
