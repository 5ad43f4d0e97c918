package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/pgtest"
	"github.com/cairnhq/cairn/internal/reexec"
	"github.com/cairnhq/cairn/internal/testws"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/workspace"
)

// Leases mode on a real PostgreSQL: peers (child processes standing for
// hosts on other machines) share one database and coordinate by leases
// only. The host registers the real openers; this test binary registers
// its own, so that its step supervisors open the test's database.

// pgRef is the Source of a "pgtest" StoreRef.
type pgRef struct {
	URL       string `json:"url"`
	Workspace string `json:"workspace"`
}

func init() {
	RegisterStoreOpener("pgtest", func(ctx context.Context, source string) (StepStore, error) {
		var ref pgRef
		if err := json.Unmarshal([]byte(source), &ref); err != nil {
			return nil, err
		}
		return postgres.Open(ctx, postgres.Config{URL: ref.URL, WorkspaceID: ref.Workspace, MaxConns: 2})
	})
}

var pgLeaseTimes = LeaseTimes{Length: 2 * time.Second, Renew: 400 * time.Millisecond}

// pgLeaseOptions are the options of an engine of these tests.
func pgLeaseOptions(st store.Store, ws *workspace.Workspace, ref pgRef) Options {
	src, _ := json.Marshal(ref)
	return Options{Store: st, Workspace: ws, AdoptEvery: 50 * time.Millisecond, CancelPoll: 50 * time.Millisecond, KillGrace: 2 * time.Second,
		Coordination: CoordinationLeases, Leases: pgLeaseTimes, StoreRef: StoreRef{Kind: "pgtest", Source: string(src)}}
}

// pgPeer is the child role pgpeer: a peer loop on the PostgreSQL store
// until SIGTERM; it prints "ready" once started.
func pgPeer() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ref := pgRef{URL: os.Getenv("CAIRN_TEST_PG_URL"), Workspace: os.Getenv("CAIRN_TEST_PG_WS")}
	ws, err := workspace.Resolve(os.Getenv("CAIRN_TEST_WS"), os.Getenv("CAIRN_TEST_WS"), os.Getenv("CAIRN_TEST_STATE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	st, err := postgres.Open(ctx, postgres.Config{URL: ref.URL, WorkspaceID: ref.Workspace, MaxConns: 4})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer st.Close()
	e, err := New(pgLeaseOptions(st, ws, ref))
	if err == nil {
		err = e.Start(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer e.Stop()
	fmt.Println("ready")
	<-ctx.Done()
	return 0
}

const pgGatedYAML = `
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

// TestLeasesOnPostgresKilledOwnerIsAdoptedAndItsLiveStepRunsOnce: the
// owner of a run is SIGKILLed mid-step; another peer adopts the run once
// the owner's lease expired, sees the step's supervisor still renewing
// its lease, re-attaches instead of starting the safe-to-repeat step
// again, takes its result and finishes the run.
func TestLeasesOnPostgresKilledOwnerIsAdoptedAndItsLiveStepRunsOnce(t *testing.T) {
	t.Parallel()
	ref := pgRef{URL: pgtest.URL(t), Workspace: pgtest.WorkspaceID()}
	ctx := context.Background()
	ws := testws.New(t, map[string]string{"gated.yaml": pgGatedYAML})
	if err := ws.Prepare(); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.Open(ctx, postgres.Config{URL: ref.URL, WorkspaceID: ref.Workspace, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, err := New(pgLeaseOptions(st, ws, ref))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	t.Cleanup(func() { os.WriteFile(filepath.Join(ws.Root, "go"), nil, 0o600) }) // no step left waiting
	peer := func() *reexec.Child {
		c := reexec.Start(t, reexec.Params{Env: []string{"CAIRN_RUNS_CHILD=pgpeer", "CAIRN_TEST_PG_URL=" + ref.URL, "CAIRN_TEST_PG_WS=" + ref.Workspace,
			"CAIRN_TEST_WS=" + ws.Root, "CAIRN_TEST_STATE=" + filepath.Dir(ws.StateDir)}})
		if line := c.Line(t); line != "ready" {
			t.Fatalf("peer: %q", line)
		}
		return c
	}
	lease := func(name string) store.Lease {
		l, _ := st.GetLease(ctx, name)
		return l
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second) // generous: not an assertion of speed
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("gave up waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	read := func(name string) string { b, _ := os.ReadFile(filepath.Join(ws.Root, name)); return string(b) }

	a := peer()
	r, err := e.Launch(ctx, LaunchParams{Target: "gated", Detach: true})
	if err != nil {
		t.Fatal(err)
	}
	until("the step to start under the first peer", func() bool { _, err := os.Stat(filepath.Join(ws.Root, "ready")); return err == nil })
	if l := lease("run:" + r.ID); l.PID != a.Cmd.Process.Pid {
		t.Fatalf("run lease %+v, want held by the first peer %d", l, a.Cmd.Process.Pid)
	}
	a.Cmd.Process.Kill()
	a.Cmd.Wait()
	last := lease("run:" + r.ID)
	b := peer()
	until("the second peer to adopt the run", func() bool { return lease("run:"+r.ID).PID == b.Cmd.Process.Pid })
	if got := lease("run:" + r.ID); got.Since.Before(last.Expires) {
		t.Fatalf("adopted at %s, before the dead owner's lease expired at %s", got.Since, last.Expires)
	}
	step := lease("step:" + r.ID)
	if !step.Held(time.Now()) || step.PID == a.Cmd.Process.Pid || step.PID == b.Cmd.Process.Pid {
		t.Fatalf("step lease %+v: want held by the step's supervisor", step)
	}
	until("the second peer to re-attach", func() bool { return journalHas(e, r.ID, "re-attached to step gated") })
	if n := strings.Count(read("steps.log"), "start"); n != 1 {
		t.Fatalf("the step started %d times:\n%s", n, read("steps.log"))
	}
	os.WriteFile(filepath.Join(ws.Root, "go"), nil, 0o600)
	var done *store.Run
	until("the run to settle", func() bool { done, _ = st.GetRun(ctx, r.ID); return done != nil && done.Status.Settled() })
	if done.Status != store.RunSucceeded || done.OwnerPID != b.Cmd.Process.Pid {
		t.Fatalf("run %s (owner %d) %s; want succeeded under the second peer %d", done.Status, done.OwnerPID, done.Error, b.Cmd.Process.Pid)
	}
	log := strings.Fields(read("steps.log"))
	if len(log) != 4 || log[0] != "start" || log[2] != "end" || log[1] != log[3] {
		t.Fatalf("the step's log is not one start and its end:\n%s", read("steps.log"))
	}
}

// journalHas reports whether run id's journal has a record whose text
// holds s.
func journalHas(e *Engine, id, s string) bool {
	out, err := e.ReadOutput(context.Background(), id, ReadParams{Limit: 10000})
	if err != nil {
		return false
	}
	for _, rec := range out.Records {
		if strings.Contains(rec.Text, s) {
			return true
		}
	}
	return false
}
