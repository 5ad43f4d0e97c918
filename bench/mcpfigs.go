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

// figLaunchRoundTrip measures figure 3: launch_run over stdio.
func figLaunchRoundTrip(ctx context.Context, b *bench) error {
	calls, warm := 1000, 50
	if b.short {
		calls, warm = 20, 5
	}
	b.rec.declare(3, "launch_run p50", "ms", atMost(1))
	b.rec.declare(3, "launch_run p99", "ms", atMost(5))
	b.rec.note(3, "%s calls per repetition after %d warm-up calls, one at a time, each launching the noop workflow (no wait_seconds); the serve executes the runs meanwhile. Then as many `ping` requests, once the runs have settled: the same stdio and JSON-RPC path without a tool or the store; and, as a diagnostic, as many runs.Engine.Launch calls in the harness process on the same store.", count(calls), warm)
	for rep := range b.reps {
		w, err := newWorkspace(ctx, b.disk.Dir, fmt.Sprintf("rt-%d", rep))
		if err != nil {
			return err
		}
		lat, pings, err := launchCalls(ctx, b, w, calls, warm)
		w.cleanup()
		if err != nil {
			return err
		}
		b.rec.add(3, "ping p50 (the transport alone)", "ms", goal{}, percentile(pings, 50))
		direct, err := launchDirect(ctx, w, calls)
		if err != nil {
			return err
		}
		b.rec.add(3, "diagnostic: runs.Engine.Launch in process p50", "ms", goal{}, percentile(direct, 50))
		p50, p99 := percentile(lat, 50), percentile(lat, 99)
		b.rec.add(3, "launch_run p50", "ms", atMost(1), p50)
		b.rec.add(3, "launch_run p99", "ms", atMost(5), p99)
		b.rec.add(3, "launch_run max", "ms", goal{}, percentile(lat, 100))
		b.logf("fig 3: rep %d: p50 %.3f ms, p99 %.3f ms", rep+1, p50, p99)
		os.RemoveAll(filepath.Dir(w.Dir))
	}
	return nil
}

// launchCalls returns the round trips of calls launch_run calls and of as
// many pings (the same JSON-RPC path without a tool, for comparison).
func launchCalls(ctx context.Context, b *bench, w *benchWorkspace, calls, warm int) (lat, pings []float64, err error) {
	h, err := serve(ctx, b, w)
	if err != nil {
		return nil, nil, err
	}
	defer h.stop(10 * time.Second)
	if _, err := h.call("tools/list", map[string]any{}); err != nil {
		return nil, nil, err
	}
	args := map[string]any{"target": "noop"}
	for range warm {
		if _, err := h.callTool("launch_run", args); err != nil {
			return nil, nil, err
		}
	}
	lat = make([]float64, 0, calls)
	for range calls {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		t := time.Now()
		if _, err := h.callTool("launch_run", args); err != nil {
			return nil, nil, err
		}
		lat = append(lat, ms(time.Since(t)))
	}
	if err := drain(ctx, w, 2*time.Minute); err != nil {
		return nil, nil, fmt.Errorf("wait for the launched runs to settle: %w", err)
	}
	for range calls {
		t := time.Now()
		if _, err := h.call("ping", map[string]any{}); err != nil {
			return nil, nil, err
		}
		pings = append(pings, ms(time.Since(t)))
	}
	return lat, pings, nil
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

// figStartup measures figure 6: from starting serve to the answer of
// tools/list, on an empty store and on one with 100,000 settled runs.
func figStartup(ctx context.Context, b *bench) error {
	n := 100_000
	if b.short {
		n = 1_000
	}
	label := fmt.Sprintf("with %s settled runs", count(n))
	b.rec.declare(6, label, "ms", atMost(100))
	empty, err := newWorkspace(ctx, b.disk.Dir, "start-empty")
	if err != nil {
		return err
	}
	defer empty.cleanup()
	full, err := newWorkspace(ctx, b.disk.Dir, "start-full")
	if err != nil {
		return err
	}
	defer full.cleanup()
	t := time.Now()
	st, err := full.openStore(ctx, "NORMAL")
	if err != nil {
		return err
	}
	err = seedSettledRuns(ctx, st, n)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	b.logf("fig 6: seeded %s settled runs in %s", count(n), time.Since(t).Round(time.Millisecond))
	b.rec.note(6, "%s settled runs seeded through the store API in %s; each start is a fresh process (the binary is in the page cache after a warm-up start).", count(n), time.Since(t).Round(time.Millisecond))
	if _, err := startupTime(ctx, b, empty); err != nil { // warm-up
		return err
	}
	for rep := range b.reps {
		for _, c := range []struct {
			w     *benchWorkspace
			label string
			g     goal
		}{{empty, "empty store", goal{}}, {full, label, atMost(100)}} {
			d, err := startupTime(ctx, b, c.w)
			if err != nil {
				return fmt.Errorf("%s: %w", c.label, err)
			}
			b.rec.add(6, c.label, "ms", c.g, d)
			b.logf("fig 6: rep %d: %s: %.1f ms", rep+1, c.label, d)
		}
	}
	return nil
}

// startupTime starts serve and returns the milliseconds from process start
// until the tools/list answer was read.
func startupTime(ctx context.Context, b *bench, w *benchWorkspace) (float64, error) {
	bin, err := b.mcpHost(ctx)
	if err != nil {
		return 0, err
	}
	h, err := startHost(hostParams{Bin: bin, Args: []string{"serve"}, StateRoot: w.StateRoot, Workspace: w.Dir, Stdio: true})
	if err != nil {
		return 0, err
	}
	defer h.stop(10 * time.Second)
	if err := h.initialize(); err != nil {
		return 0, err
	}
	raw, err := h.call("tools/list", map[string]any{})
	d := time.Since(h.started)
	if err != nil {
		return 0, err
	}
	var list struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(raw, &list); err != nil || len(list.Tools) == 0 {
		return 0, fmt.Errorf("tools/list answered no tools: %s", truncate(string(raw), 200))
	}
	return ms(d), nil
}

// figMemory measures figure 7: resident memory of an idle serve, with no
// automation and with 10,000.
func figMemory(ctx context.Context, b *bench) error {
	n := 10_000
	settle := 2 * time.Second
	if b.short {
		n, settle = 200, 300*time.Millisecond
	}
	withLabel := fmt.Sprintf("RSS with %s automations", count(n))
	b.rec.declare(7, "RSS idle", "MB", atMost(30))
	b.rec.declare(7, withLabel, "MB", atMost(80))
	idle, err := newWorkspace(ctx, b.disk.Dir, "mem-idle")
	if err != nil {
		return err
	}
	defer idle.cleanup()
	many, err := newWorkspace(ctx, b.disk.Dir, "mem-many")
	if err != nil {
		return err
	}
	defer many.cleanup()
	st, err := many.openStore(ctx, "NORMAL")
	if err != nil {
		return err
	}
	err = seedAutomations(ctx, st, n)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	b.rec.note(7, "Read %s after the handshake and tools/list, the serve idle meanwhile (it holds the scheduler lock, so it plans every automation). MB = 10^6 bytes. %s automations, each a yearly cron, seeded through the store API.", settle, count(n))
	for rep := range b.reps {
		for _, c := range []struct {
			w     *benchWorkspace
			label string
			hwm   string
			g     goal
		}{{idle, "RSS idle", "peak (VmHWM) idle", atMost(30)}, {many, withLabel, fmt.Sprintf("peak (VmHWM) with %s automations", count(n)), atMost(80)}} {
			rss, hwm, err := serveMemory(ctx, b, c.w, settle)
			if err != nil {
				return fmt.Errorf("%s: %w", c.label, err)
			}
			b.rec.add(7, c.label, "MB", c.g, rss)
			b.rec.add(7, c.hwm, "MB", goal{}, hwm)
			b.logf("fig 7: rep %d: %s: RSS %.1f MB, HWM %.1f MB", rep+1, c.label, rss, hwm)
		}
	}
	return nil
}

func serveMemory(ctx context.Context, b *bench, w *benchWorkspace, settle time.Duration) (rss, hwm float64, err error) {
	h, err := serve(ctx, b, w)
	if err != nil {
		return 0, 0, err
	}
	defer h.stop(10 * time.Second)
	if _, err := h.call("tools/list", map[string]any{}); err != nil {
		return 0, 0, err
	}
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	m, err := procStatus(h.cmd.Process.Pid)
	if err != nil {
		return 0, 0, fmt.Errorf("read memory of mcp-host: %w", err)
	}
	return m["VmRSS"], m["VmHWM"], nil
}
