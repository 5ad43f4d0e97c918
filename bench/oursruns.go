package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/sqlite"
)

// variant says what a throughput measurement of ours runs: which
// workflow, and which parts of Cairn (the real thing, or a diagnostic
// without some part, to tell what limits it).
type variant struct {
	Target      string // the workflow; default "step"
	MemoryStore bool   // store/memory instead of SQLite
	NoFiles     bool   // runs.Options.InMemory: journals and run locks in memory
}

// settleTimes is the store of a measurement, noting when each settle
// returned (the run's end committed and acknowledged): the completions.
type settleTimes struct {
	store.Store
	done *completions
}

func (s *settleTimes) SettleRun(ctx context.Context, p store.SettleParams) (*store.Run, error) {
	r, err := s.Store.SettleRun(ctx, p)
	if err == nil {
		s.done.mark()
	}
	return r, err
}

// oursThroughput launches p.Jobs runs of v.Target through
// runs.Engine.Launch from p.Launchers goroutines, on a fresh workspace
// whose store runs at p.Synchronous, and measures the steady rate of
// settles (see completions). Every run must have succeeded. For SQLite it
// also counts, per run, the store's write operations and the writer's busy
// time (sqlite.Store.WriterStats) and the commits (SQLite's commit hook).
func oursThroughput(ctx context.Context, p throughputParams, v variant) (tpResult, error) {
	if v.Target == "" {
		v.Target = "step"
	}
	w, err := freshWorkspace(ctx, p.Dir)
	if err != nil {
		return tpResult{}, err
	}
	defer w.cleanup()
	var st store.Store
	if v.MemoryStore {
		st = memory.New()
	} else if st, err = w.openStore(ctx, p.Synchronous); err != nil {
		return tpResult{}, err
	}
	defer st.Close()
	done := newCompletions(p.Jobs)
	eng, err := runs.New(runs.Options{Store: &settleTimes{Store: st, done: done}, Workspace: w.WS, InMemory: v.NoFiles})
	if err != nil {
		return tpResult{}, err
	}
	// The peer loop runs as in any mcp-host process; launched runs are
	// executed by their launcher's engine either way.
	if err := eng.Start(ctx); err != nil {
		return tpResult{}, err
	}
	defer eng.Stop()

	commits0 := commitsOf(w.WS.DBPath())
	var ws0 sqlite.WriterStats
	sq, _ := st.(*sqlite.Store)
	if sq != nil {
		ws0 = sq.WriterStats()
	}
	cpu0 := processCPU()
	done.begin()
	// Launch with ctx, not parallel's: a launched run must outlive the
	// launching.
	if err := parallel(ctx, p.Jobs, p.Launchers, func(context.Context, int) error {
		_, err := eng.Launch(ctx, runs.LaunchParams{Target: v.Target})
		return err
	}); err != nil {
		return tpResult{}, fmt.Errorf("launch %s: %w", v.Target, err)
	}
	// Every launched run is executing in this engine until it settles.
	if err := waitFor(ctx, p.Timeout, 200*time.Microsecond, func() (bool, error) { return eng.Executing() == 0, nil }); err != nil {
		return tpResult{}, fmt.Errorf("wait for %d runs to settle: %w", p.Jobs, err)
	}
	elapsed := done.elapsed()
	res := tpResult{
		Commits: float64(commitsOf(w.WS.DBPath())-commits0) / float64(p.Jobs),
		CPU:     (processCPU() - cpu0) / time.Duration(p.Jobs),
	}
	if sq != nil {
		ws := sq.WriterStats()
		res.Writes = float64(ws.Operations-ws0.Operations) / float64(p.Jobs)
		res.WriterBusy = float64(ws.Busy-ws0.Busy) / float64(elapsed)
		res.WriterPerRun = (ws.Busy - ws0.Busy) / time.Duration(p.Jobs)
	}
	if res.Rate, err = done.steadyRate(); err != nil {
		return tpResult{}, err
	}
	if err := allSucceeded(ctx, st, p.Jobs); err != nil {
		return tpResult{}, err
	}
	return res, nil
}

// allSucceeded checks that the store holds n succeeded runs.
func allSucceeded(ctx context.Context, st store.Store, n int) error {
	ok := 0
	for cursor := ""; ; {
		page, next, err := st.ListRuns(ctx, store.RunFilter{Status: []store.RunStatus{store.RunSucceeded}, Limit: 1000, Cursor: cursor})
		if err != nil {
			return err
		}
		ok += len(page)
		if next == "" {
			break
		}
		cursor = next
	}
	if ok != n {
		return fmt.Errorf("%d of %d runs succeeded", ok, n)
	}
	return nil
}

// engineShareLimit says what limits figure 2, from this run's rows.
func engineShareLimit(r *recorder) string {
	bound := "even without the engine the store path does not reach the goal"
	if x := median(r, 2, "diagnostic: the store alone / engine alone"); x >= 50 {
		bound = "the store path alone would reach the goal, but ours pays for both: its CPU per run is about the engine's plus the store's, " +
			"and on a machine where CPU is the scarce resource (see the load average above) runs per second follow CPU per run"
	}
	return fmt.Sprintf("CPU per run, on the store's single writer goroutine: the writer is busy %s of the time while ours runs (%s per run, %s commits per run, "+
		"so the disk's fsync is not it: group commit puts some %s runs in one). Ours uses %s of CPU per run against the engine alone's %s; "+
		"the difference, about three quarters of ours, is the store path: per run three write operations of sixteen SQLite statements "+
		"(a savepoint and its release, the operation's id, the run read and written back, the ledger entry) through database/sql into "+
		"modernc.org/sqlite (SQLite compiled to Go), plus the commit's WAL writes. The store alone, the same three writes with no engine "+
		"(%s), reaches %s at FULL, %s of the engine alone, with its writer busy %s and %s of CPU per run: %s. For 50%%, the store path "+
		"would have to cost about what the engine costs per run. A CPU profile of this harness (`go run . -only 2 -cpuprofile cpu.out`, 2026-12-02) put a little over half of the "+
		"writer's CPU inside sqlite3_step (bytecode, B-trees; the commit and its WAL writes about a fifth of the writer), the rest in database/sql "+
		"and the driver (binding, statement bookkeeping, allocations). Next levers: fewer statements per write (the run row kept by revision "+
		"instead of read back; the savepoint pair of each operation: six of the sixteen), and a writer that calls the driver without database/sql.",
		val(r, 2, "ours, FULL: writer goroutine busy"), val(r, 2, "ours, FULL: writer time"), val(r, 2, "ours, FULL: commits"),
		perCommit(r), val(r, 2, "ours, FULL: CPU"), val(r, 2, "the engine alone (memory store, no files): CPU"),
		fmt.Sprintf("%d goroutines", storeOnlyWriters), val(r, 2, "diagnostic: the SQLite store alone"), val(r, 2, "diagnostic: the store alone / engine alone"),
		val(r, 2, "diagnostic: the store alone: writer"), val(r, 2, "diagnostic: the store alone: CPU"), bound)
}

// median is the median of row name of fig; NaN when there is none.
func median(r *recorder, fig int, name string) float64 {
	for _, x := range r.figRows(fig) {
		if x.Name == name {
			return summarise(x.Samples).Median
		}
	}
	return math.NaN()
}

// perCommit is how many runs one commit of ours holds, from figure 2.
func perCommit(r *recorder) string {
	if m := median(r, 2, "ours, FULL: commits per run"); m > 0 {
		return fmt.Sprintf("%.0f", 1/m)
	}
	return "—"
}

// storeOnlyWriters is how many goroutines write in storeOnlyThroughput:
// as many writes in flight as ours has with its launchers and the runs
// they started (each run executes in its own goroutine).
const storeOnlyWriters = 64

// storeOnlyThroughput writes what a run of `step` writes, without the
// engine: storeOnlyWriters goroutines each create a claimed run, record
// its step's start, and settle it with the step's outcome, on a fresh
// SQLite store at p.Synchronous. What it reaches is what the store path
// allows; the engine adds its own work to the same three writes.
func storeOnlyThroughput(ctx context.Context, p throughputParams) (tpResult, error) {
	w, err := freshWorkspace(ctx, p.Dir)
	if err != nil {
		return tpResult{}, err
	}
	defer w.cleanup()
	st, err := w.openStore(ctx, p.Synchronous)
	if err != nil {
		return tpResult{}, err
	}
	defer st.Close()
	literals := json.RawMessage(`{"workflow":{"name":"step","steps":[{"id":"tick","sleep":"1ns"}]},"input":{}}`)
	done := newCompletions(p.Jobs)
	ws0, cpu0 := st.WriterStats(), processCPU()
	done.begin()
	err = parallel(ctx, p.Jobs, storeOnlyWriters, func(ctx context.Context, i int) error {
		id := fmt.Sprintf("run_%08d", i)
		now := time.Now()
		r := &store.Run{ID: id, Target: "step", Status: store.RunRunning, OwnerPID: os.Getpid(), Claim: "c", Literals: literals,
			Trigger: store.Trigger{Kind: "manual"}, CreatedAt: now, StartedAt: now}
		if err := st.CreateRun(ctx, r); err != nil {
			return err
		}
		if _, err := st.StartStep(ctx, store.StepStart{RunID: id, Claim: "c", Path: "tick", Position: 1, Kind: "sleep", PID: os.Getpid(), Detail: json.RawMessage(`{"until":"` + now.UTC().Format(time.RFC3339) + `"}`), Now: now}); err != nil {
			return err
		}
		if _, err := st.SettleRun(ctx, store.SettleParams{ID: id, Claim: "c", Status: store.RunSucceeded, Now: time.Now(),
			Ledger: []store.StepFinish{{RunID: id, Claim: "c", Path: "tick", Position: 1, Kind: "sleep", Status: "succeeded", Result: json.RawMessage(`{}`), Now: time.Now()}}}); err != nil {
			return err
		}
		done.mark()
		return nil
	})
	if err != nil {
		return tpResult{}, fmt.Errorf("store alone: %w", err)
	}
	ws := st.WriterStats()
	res := tpResult{
		CPU:          (processCPU() - cpu0) / time.Duration(p.Jobs),
		Writes:       float64(ws.Operations-ws0.Operations) / float64(p.Jobs),
		Commits:      float64(ws.Commits-ws0.Commits) / float64(p.Jobs),
		WriterBusy:   float64(ws.Busy-ws0.Busy) / float64(done.elapsed()),
		WriterPerRun: (ws.Busy - ws0.Busy) / time.Duration(p.Jobs),
	}
	if res.Rate, err = done.steadyRate(); err != nil {
		return tpResult{}, err
	}
	return res, nil
}

// freshWorkspace makes dir and a bench workspace in it.
func freshWorkspace(ctx context.Context, dir string) (*benchWorkspace, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return newWorkspace(ctx, dir, "ws")
}
