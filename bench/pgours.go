package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/postgres"
)

// pingWorkflow is figure 11's run: one step that really runs (an http GET
// to a server in the harness, answered at once), its start and its result
// recorded, no process forked: the counterpart of River's no-op worker.
func pingWorkflow(url string) string {
	return `name: ping
description: "One http step against the harness: a step that runs, no process forked."
steps:
  - id: get
    http:
      method: GET
      url: "` + url + `"
`
}

// pingServer answers every request with 204 until closed.
func pingServer() (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/", func() { srv.Close() }, nil
}

// oursPGThroughput launches p.Jobs runs of the ping workflow through
// runs.Engine on store/postgres at dbURL from p.Launchers goroutines, and
// returns the steady rate of settles (see completions), as figure 1 does
// for both peers; every run must have succeeded.
func oursPGThroughput(ctx context.Context, b *bench, dbURL string, p throughputParams) (rate, opsPerRun float64, err error) {
	url, stop, err := pingServer()
	if err != nil {
		return 0, 0, err
	}
	defer stop()
	dir, err := os.MkdirTemp(b.disk.Dir, "pg-ours-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	w, err := newWorkspace(ctx, dir, "ws")
	if err != nil {
		return 0, 0, err
	}
	defer w.cleanup()
	if err := os.WriteFile(filepath.Join(w.WS.WorkflowsDir(), "ping.yaml"), []byte(pingWorkflow(url)), 0o600); err != nil {
		return 0, 0, err
	}
	st, err := postgres.Open(ctx, postgres.Config{URL: dbURL, WorkspaceID: "bench", MaxConns: 32})
	if err != nil {
		return 0, 0, err
	}
	defer st.Close()
	done := newCompletions(p.Jobs)
	eng, err := runs.New(runs.Options{Store: &settleTimes{Store: st, done: done}, Workspace: w.WS})
	if err != nil {
		return 0, 0, err
	}
	if err := eng.Start(ctx); err != nil {
		return 0, 0, err
	}
	defer eng.Stop()
	done.begin()
	err = parallel(ctx, p.Jobs, p.Launchers, func(context.Context, int) error {
		_, err := eng.Launch(ctx, runs.LaunchParams{Target: "ping"})
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("launch ping: %w", err)
	}
	if err := waitFor(ctx, p.Timeout, 200*time.Microsecond, func() (bool, error) { return eng.Executing() == 0, nil }); err != nil {
		return 0, 0, fmt.Errorf("wait for %d runs to settle: %w", p.Jobs, err)
	}
	if ok, err := countSucceeded(ctx, st); err != nil || ok != p.Jobs {
		return 0, 0, fmt.Errorf("%d of %d runs succeeded (%v)", ok, p.Jobs, err)
	}
	var ops int
	if err := st.Pool().QueryRow(ctx, "SELECT count(*) FROM cairn_bench.operations").Scan(&ops); err != nil {
		return 0, 0, fmt.Errorf("count write operations: %w", err)
	}
	if rate, err = done.steadyRate(); err != nil {
		return 0, 0, err
	}
	return rate, float64(ops) / float64(p.Jobs), nil
}

// countSucceeded pages through the succeeded runs of st.
func countSucceeded(ctx context.Context, st store.RunStore) (int, error) {
	n := 0
	for cursor := ""; ; {
		page, next, err := st.ListRuns(ctx, store.RunFilter{Status: []store.RunStatus{store.RunSucceeded}, Limit: 1000, Cursor: cursor})
		if err != nil {
			return n, err
		}
		n += len(page)
		if next == "" {
			return n, nil
		}
		cursor = next
	}
}
