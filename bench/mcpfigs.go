package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store/sqlite"
)

// serve starts `mcp-host serve` on w over stdio and does the handshake.
func serve(ctx context.Context, b *bench, w *benchWorkspace) (*host, error) {
	bin, err := b.mcpHost(ctx)
	if err != nil {
		return nil, err
	}
	h, err := startHost(hostParams{Bin: bin, Args: []string{"serve"}, StateRoot: w.StateRoot, Workspace: w.Dir, Stdio: true})
	if err != nil {
		return nil, err
	}
	if err := h.initialize(); err != nil {
		h.stop(time.Second)
		return nil, err
	}
	return h, nil
}

// drain waits until no run of w needs a process any more, so that a serve
// can be stopped without handing work to a background worker.
func drain(ctx context.Context, w *benchWorkspace, timeout time.Duration) error {
	st, err := sqlite.Open(ctx, w.WS.DBPath(), sqlite.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer st.Close()
	return waitFor(ctx, timeout, 10*time.Millisecond, func() (bool, error) {
		n, err := st.CountPending(ctx)
		return n == 0, err
	})
}

// figLaunchRoundTrip measures figure 3: launch_run over stdio, against
// its floor measured in the same repetition: one durable commit (an
// appending fsync, as the WAL writes) plus the transport (a ping over the
// same pipes).
func figLaunchRoundTrip(ctx context.Context, b *bench) error {
	calls, warm, fsyncFor := 1000, 50, 500*time.Millisecond
	if b.short {
		calls, warm, fsyncFor = 20, 5, 50*time.Millisecond
	}
	overName := "launch_run p50 − floor (fsync p50 + ping p50)"
	b.rec.declare(3, overName, "ms", atMost(0.25))
	b.rec.declare(3, "launch_run p99", "ms", atMost(1.5))
	b.rec.note(3, "%s calls per repetition after %d warm-up calls, one at a time, each launching the noop workflow (no wait_seconds); the serve executes the runs meanwhile. Then as many `ping` requests, once the runs have settled: the same stdio and JSON-RPC path without a tool or the store. The floor of each repetition is its fsync p50 (appending 4 KiB to a growing file and fsyncing, for %s, as figure 9) plus its ping p50; the goal is launch_run p50 ≤ floor + 0.25 ms. As a diagnostic, as many runs.Engine.Launch calls in the harness process on the same store.", count(calls), warm, fsyncFor)
	for rep := range b.reps {
		w, err := newWorkspace(ctx, b.disk.Dir, fmt.Sprintf("rt-%d", rep))
		if err != nil {
			return err
		}
		rt, err := launchCalls(ctx, b, w, calls, warm)
		w.cleanup()
		if err != nil {
			return err
		}
		fs, err := fsyncP50(b.disk.Dir, fsyncFor)
		if err != nil {
			return err
		}
		direct, err := launchDirect(ctx, w, calls)
		if err != nil {
			return err
		}
		lat := rt.launch
		p50, p99, ping := percentile(lat, 50), percentile(lat, 99), percentile(rt.ping, 50)
		b.rec.add(3, overName, "ms", atMost(0.25), p50-(fs+ping))
		b.rec.add(3, "launch_run p99", "ms", atMost(1.5), p99)
		b.rec.add(3, "launch_run p50", "ms", goal{}, p50)
		b.rec.add(3, "fsync p50 (appending 4 KiB)", "ms", goal{}, fs)
		b.rec.add(3, "ping p50 (the transport alone)", "ms", goal{}, ping)
		b.rec.add(3, "launch_run max", "ms", goal{}, percentile(lat, 100))
		b.rec.add(3, "diagnostic: runs.Engine.Launch in process p50", "ms", goal{}, percentile(direct, 50))
		b.rec.add(3, "diagnostic: get_run p50 (a tool call without a write)", "ms", goal{}, percentile(rt.getRun, 50))
		b.rec.add(3, "diagnostic: cancel_run of a settled run p50 (refused: a tool call and its audit entry's commit)", "ms", goal{}, percentile(rt.audited, 50))
		b.logf("fig 3: rep %d: p50 %.3f ms (fsync %.3f + ping %.3f), p99 %.3f ms", rep+1, p50, fs, ping, p99)
		os.RemoveAll(filepath.Dir(w.Dir))
	}
	return nil
}

// roundTrips are the round trips of one repetition of figure 3, in ms.
type roundTrips struct {
	launch  []float64 // launch_run
	ping    []float64 // ping: the transport alone
	getRun  []float64 // get_run: a tool call that reads, not audited
	audited []float64 // cancel_run of a settled run: refused, audited (one commit)
}

// launchCalls returns the round trips of calls launch_run calls and of as
// many pings (the same JSON-RPC path without a tool), then, as
// diagnostics, of get_run (the tool path without a write) and of
// cancel_run of a settled run (the tool path and the audit's commit).
func launchCalls(ctx context.Context, b *bench, w *benchWorkspace, calls, warm int) (*roundTrips, error) {
	h, err := serve(ctx, b, w)
	if err != nil {
		return nil, err
	}
	defer h.stop(10 * time.Second)
	if _, err := h.call("tools/list", map[string]any{}); err != nil {
		return nil, err
	}
	args := map[string]any{"target": "noop"}
	for range warm {
		if _, err := h.callTool("launch_run", args); err != nil {
			return nil, err
		}
	}
	rt := &roundTrips{}
	var last struct {
		ID string `json:"id"`
	}
	for range calls {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t := time.Now()
		res, err := h.callTool("launch_run", args)
		if err != nil {
			return nil, err
		}
		rt.launch = append(rt.launch, ms(time.Since(t)))
		if err := json.Unmarshal(res.StructuredContent, &last); err != nil || last.ID == "" {
			return nil, fmt.Errorf("launch_run answered no run id: %s", truncate(string(res.StructuredContent), 200))
		}
	}
	if err := drain(ctx, w, 2*time.Minute); err != nil {
		return nil, fmt.Errorf("wait for the launched runs to settle: %w", err)
	}
	ref := map[string]any{"run_id": last.ID}
	for _, c := range []struct {
		method string
		params any
		into   *[]float64
	}{
		{"ping", map[string]any{}, &rt.ping},
		{"tools/call", map[string]any{"name": "get_run", "arguments": ref}, &rt.getRun},
		{"tools/call", map[string]any{"name": "cancel_run", "arguments": ref}, &rt.audited}, // refused: the run settled
	} {
		for range calls {
			t := time.Now()
			if _, err := h.call(c.method, c.params); err != nil {
				return nil, err
			}
			*c.into = append(*c.into, ms(time.Since(t)))
		}
	}
	return rt, nil
}

// launchDirect times Engine.Launch of noop, one at a time, through the Go
// API on w's store (FULL): what launch_run costs without MCP and stdio.
func launchDirect(ctx context.Context, w *benchWorkspace, calls int) ([]float64, error) {
	st, err := w.openStore(ctx, "FULL")
	if err != nil {
		return nil, err
	}
	defer st.Close()
	eng, err := runs.New(runs.Options{Store: st, Workspace: w.WS})
	if err != nil {
		return nil, err
	}
	if err := eng.Start(ctx); err != nil {
		return nil, err
	}
	defer eng.Stop()
	lat := make([]float64, 0, calls)
	for range calls {
		t := time.Now()
		if _, err := eng.Launch(ctx, runs.LaunchParams{Target: "noop"}); err != nil {
			return nil, err
		}
		lat = append(lat, ms(time.Since(t)))
	}
	return lat, waitFor(ctx, time.Minute, time.Millisecond, func() (bool, error) { return eng.Executing() == 0, nil })
}
