package automations

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/reexec"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// runChild plays one role in a multi-process test:
//
//	scheduler <db> <locks> <workspace> <targets>
//	    run a Scheduler over the store until stdin closes; print "ready"
//	    once started, then "polled" after each monitor poll. targets is "ok" (every target prepares) or "hang"
//	    (preparing a run blocks forever, as a process stuck mid-launch).
func runChild(args []string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	if len(args) != 5 || args[0] != "scheduler" {
		return fail(fmt.Errorf("bad role %q", args))
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, args[1], sqlite.Options{})
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	var tg Targets = &stubTargets{}
	if args[4] == "hang" {
		tg = TargetsFunc(func(ctx context.Context, target string, input json.RawMessage) (*store.Run, error) {
			select {} // until SIGKILL
		})
	}
	s := New(Config{Store: st, LocksDir: args[2], Targets: tg, Workspace: args[3], LockRetry: 250 * time.Millisecond, Check: 200 * time.Millisecond})
	s.hook = func(event string) {
		if event == eventPoll {
			fmt.Println("polled")
		}
	}
	if err := s.Start(ctx); err != nil {
		return fail(err)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	s.Stop()
	return 0
}

// child is a scheduler process. After "ready" it prints "polled" after
// each monitor poll.
type child struct{ *reexec.Child }

func startChild(t *testing.T, db, locksDir, ws, targets string) *child {
	t.Helper()
	c := reexec.Start(t, reexec.Params{Env: []string{childEnv + "=1"}, Args: []string{"scheduler", db, locksDir, ws, targets}})
	if line := c.Line(t); line != "ready" {
		t.Fatalf("child said %q, want ready", line)
	}
	return &child{c}
}

// expectPoll waits until the child finished a monitor poll.
func (c *child) expectPoll(t *testing.T) {
	t.Helper()
	if line := c.Line(t); line != "polled" {
		t.Fatalf("child said %q, want polled", line)
	}
}

// stop closes the child's stdin and waits for it to stop cleanly.
func (c *child) stop(t *testing.T) { stopAll(t, []*child{c}) }

// stopAll stops children at once and checks that each exited cleanly.
func stopAll(t *testing.T, cs []*child) {
	t.Helper()
	for _, c := range cs {
		c.Stdin.Close()
	}
	for _, c := range cs {
		if err := c.Cmd.Wait(); err != nil {
			t.Errorf("child %d: %v", c.Cmd.Process.Pid, err)
		}
	}
}

func openState(t *testing.T) (st *sqlite.Store, db, locksDir, ws string) {
	t.Helper()
	dir := t.TempDir()
	db, locksDir, ws = filepath.Join(dir, "state.sqlite3"), filepath.Join(dir, "locks"), filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, db, locksDir, ws
}

// TestFourSchedulersFireEachSlotOnce runs four scheduler processes over one
// state folder with 50 automations ticking every second (a fixed rate:
// overlap allow, so no run needs to finish) for 10 s of real time, and
// SIGKILLs the leader half-way. Every (automation, nominal time) must be
// fired at most once, every slot must be either fired or counted as
// missed, and fires must resume within 2 s of the kill.
func TestFourSchedulersFireEachSlotOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s of real time")
	}
	t.Parallel()
	ctx := context.Background()
	st, db, locksDir, ws := openState(t)
	svc := &Service{Store: st, LocksDir: locksDir, Targets: &stubTargets{}}
	const n = 50
	for i := range n {
		if _, err := svc.Create(ctx, CreateParams{Owner: "cli", Spec: Spec{Key: fmt.Sprintf("beat-%02d", i), Target: "hello", Every: "1s", Overlap: "allow"}}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	var children []*child
	for range 4 {
		children = append(children, startChild(t, db, locksDir, ws, "ok"))
	}

	// Half-way, SIGKILL whichever child leads.
	time.Sleep(time.Until(start.Add(5 * time.Second)))
	h, held, err := locks.Describe(locksDir, "scheduler")
	if err != nil || !held {
		t.Fatalf("no scheduler leads: %v", err)
	}
	at := slices.IndexFunc(children, func(c *child) bool { return c.Cmd.Process.Pid == h.PID })
	if at < 0 {
		t.Fatalf("the leader, pid %d, is not one of the children", h.PID)
	}
	leader := children[at]
	killed := time.Now()
	if err := leader.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	leader.Cmd.Wait()
	children = slices.Delete(children, at, at+1)

	time.Sleep(time.Until(start.Add(10 * time.Second)))
	stopAll(t, children)

	// Every slot fired at most once: no (automation, nominal) has two runs.
	r := st.Reader()
	var dups int
	if err := r.QueryRow(`SELECT count(*) FROM (SELECT 1 FROM runs GROUP BY json_extract(trigger, '$.automation_id'), json_extract(trigger, '$.nominal') HAVING count(*) > 1)`).Scan(&dups); err != nil {
		t.Fatal(err)
	}
	if dups != 0 {
		t.Fatalf("%d slots fired more than once", dups)
	}
	list, err := st.ListAutomations(ctx, store.AutomationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var totalRuns, totalMissed int64
	for _, a := range list {
		var runs int64
		if err := r.QueryRow(`SELECT count(*) FROM runs WHERE json_extract(trigger, '$.automation_id') = ?`, a.ID).Scan(&runs); err != nil {
			t.Fatal(err)
		}
		st := a.State
		// Each slot from creation to the cursor was fired or counted missed,
		// and each fire queued exactly one run.
		slots := int64(st.Cursor.Sub(a.CreatedAt.Truncate(time.Second)) / time.Second)
		if runs != st.Fires || st.Fires+st.Missed != slots || st.Skipped != 0 {
			t.Errorf("%s: %d runs, %d fires, %d missed, %d skipped, %d slots", a.Key, runs, st.Fires, st.Missed, st.Skipped, slots)
		}
		if st.Fires < 5 {
			t.Errorf("%s fired only %d times in 10 s", a.Key, st.Fires)
		}
		// The fires kept in history name their runs.
		fires, _ := svc.Store.ListFires(ctx, a.ID, 0)
		for _, f := range fires {
			run, err := svc.Store.GetRun(ctx, f.RunID)
			if err != nil || run.Trigger.AutomationID != a.ID || !run.Trigger.Nominal.Equal(f.Nominal) {
				t.Errorf("%s: fire at %v names run %q: %+v, %v", a.Key, f.Nominal, f.RunID, run, err)
			}
		}
		totalRuns += runs
		totalMissed += st.Missed
	}
	// Fires resumed within 2 s of the kill.
	var firstAfter int64
	if err := r.QueryRow(`SELECT coalesce(min(created_at), 0) FROM runs WHERE created_at > ?`, killed.UnixMilli()).Scan(&firstAfter); err != nil {
		t.Fatal(err)
	}
	if firstAfter == 0 {
		t.Fatal("no fire after the kill")
	}
	resumed := time.UnixMilli(firstAfter).Sub(killed)
	t.Logf("%d automations, %d runs, %d slots missed; fires resumed %v after the SIGKILL of the leader", n, totalRuns, totalMissed, resumed)
	if resumed > 2*time.Second {
		t.Fatalf("fires resumed %v after the kill, want within 2s", resumed)
	}
}

// TestPendingLaunchSurvivesSIGKILL kills a scheduler after it recorded a
// monitor's pending launch and before it handed it over; the next
// scheduler launches it exactly once, under the same nominal time.
func TestPendingLaunchSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, db, locksDir, ws := openState(t)
	watched := filepath.Join(ws, "data.csv")
	writeFile(t, watched, "a,b\n")
	svc := &Service{Store: st, LocksDir: locksDir, Targets: &stubTargets{}}
	res, err := svc.Create(ctx, CreateParams{Owner: "cli", Spec: Spec{Key: "import", Target: "hello", Files: []string{"*.csv"}, Every: "1s"}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Automation.ID
	state := func() store.AutomationState {
		a, err := st.GetAutomation(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return a.State
	}

	stuck := startChild(t, db, locksDir, ws, "hang")
	for state().Observation == "" { // the baseline
		stuck.expectPoll(t)
	}
	writeFile(t, watched, "a,b\n1,2\n")
	pollFor(t, "the pending launch", func() bool { return state().Pending != nil })
	pending := *state().Pending
	if err := stuck.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	stuck.Cmd.Wait()
	if c, _ := st.Counts(ctx); c.Runs != 0 {
		t.Fatalf("%d runs before the launch was handed over", c.Runs)
	}

	next := startChild(t, db, locksDir, ws, "ok")
	for state().Pending != nil { // the launch happens in a poll
		next.expectPoll(t)
	}
	// Let it poll a few more times: the change must not launch again.
	for range 3 {
		next.expectPoll(t)
	}
	next.stop(t)
	fires, _ := st.ListFires(ctx, id, 0)
	if c, _ := st.Counts(ctx); c.Runs != 1 || len(fires) != 1 || !fires[0].Nominal.Equal(pending.Nominal) || fires[0].Outcome != store.FireQueued {
		t.Fatalf("%d runs, fires %+v; want one at the pending nominal %v", c.Runs, fires, pending.Nominal)
	}
	if s := state(); s.Observation != pending.Observation || !strings.HasPrefix(s.Observation, "sha256:") {
		t.Fatalf("observation %q, want the pending one %q", s.Observation, pending.Observation)
	}
}

// pollFor polls cond, which reads what other processes wrote to the
// store, until it holds; the test's deadline bounds the wait. Schedulers
// in this process signal instead (watch).
func pollFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if dl, ok := t.Deadline(); ok && time.Until(dl) < time.Second {
			t.Fatalf("gave up waiting: %s", what)
		}
		<-tick.C
	}
}
