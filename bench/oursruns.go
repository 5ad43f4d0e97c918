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

// variant says which parts of Cairn a throughput measurement uses: the
// real thing, or a diagnostic without some part, to tell what limits it.
type variant struct {
	MemoryStore bool // store/memory instead of SQLite
	NoFiles     bool // runs.Options.InMemory: journals and run locks in memory
}

// oursThroughput launches p.Jobs noop runs through runs.Engine.Launch from
// p.Launchers goroutines, on a fresh workspace whose store runs at
// p.Synchronous, and returns runs settled per second, counted from the
// first launch until every run has settled. Every run must have succeeded.
func oursThroughput(ctx context.Context, b *bench, p throughputParams) (float64, error) {
	rate, ops, err := oursThroughputVariant(ctx, p, variant{})
	if err == nil && ops > 0 {
		b.rec.add(1, "diagnostic: store write operations per run", "", goal{}, ops)
	}
	return rate, err
}

// oursThroughputVariant returns runs per second and, for SQLite, the
// store write operations per run (from the operations table: every write
// records its operation id).
func oursThroughputVariant(ctx context.Context, p throughputParams, v variant) (rate, opsPerRun float64, err error) {
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return 0, 0, err
	}
	w, err := newWorkspace(ctx, p.Dir, "ws")
	if err != nil {
		return 0, 0, err
	}
	defer w.cleanup()
	var st store.Store
	if v.MemoryStore {
		st = memory.New()
	} else if st, err = w.openStore(ctx, p.Synchronous); err != nil {
		return 0, 0, err
	}
	defer st.Close()
	eng, err := runs.New(runs.Options{Store: st, Workspace: w.WS, InMemory: v.NoFiles})
	if err != nil {
		return 0, 0, err
	}
	// The peer loop runs as in any mcp-host process; launched runs are
	// executed by their launcher's engine either way.
	if err := eng.Start(ctx); err != nil {
		return 0, 0, err
	}
	defer eng.Stop()

	start := time.Now()
	// Launch with ctx, not parallel's: a launched run must outlive the
	// launching.
	if err := parallel(ctx, p.Jobs, p.Launchers, func(context.Context, int) error {
		_, err := eng.Launch(ctx, runs.LaunchParams{Target: "noop"})
		return err
	}); err != nil {
		return 0, 0, fmt.Errorf("launch noop: %w", err)
	}
	// Every launched run is executing in this engine until it settles.
	if err := waitFor(ctx, p.Timeout, 200*time.Microsecond, func() (bool, error) { return eng.Executing() == 0, nil }); err != nil {
		return 0, 0, fmt.Errorf("wait for %d runs to settle: %w", p.Jobs, err)
	}
	elapsed := time.Since(start)
	ok := 0
	for cursor := ""; ; {
		page, next, err := st.ListRuns(ctx, store.RunFilter{Status: []store.RunStatus{store.RunSucceeded}, Limit: 1000, Cursor: cursor})
		if err != nil {
			return 0, 0, err
		}
		ok += len(page)
		if next == "" {
			break
		}
		cursor = next
	}
	if ok != p.Jobs {
		return 0, 0, fmt.Errorf("%d of %d runs succeeded", ok, p.Jobs)
	}
	if sq, ok := st.(*sqlite.Store); ok {
		var ops int
		if err := sq.Reader().QueryRowContext(ctx, "SELECT count(*) FROM operations").Scan(&ops); err != nil {
			return 0, 0, err
		}
		opsPerRun = float64(ops) / float64(p.Jobs)
	}
	return float64(p.Jobs) / elapsed.Seconds(), opsPerRun, nil
}
