package main

import (
	"context"
	"fmt"
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
// also counts the store's write operations (the operations table: every
// write records its operation id) and commits (SQLite's commit hook) per
// run.
func oursThroughput(ctx context.Context, p throughputParams, v variant) (tpResult, error) {
	if v.Target == "" {
		v.Target = "step"
	}
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return tpResult{}, err
	}
	w, err := newWorkspace(ctx, p.Dir, "ws")
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
	return fmt.Sprintf("Ours at FULL %s, the engine alone %s, with journals and run locks in memory %s.",
		val(r, 2, "ours, FULL"), val(r, 2, "the engine alone"), val(r, 2, "diagnostic: ours, FULL, journals"))
}
