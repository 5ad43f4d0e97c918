package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// figColdStart measures figure 8: from starting serve to the answer of
// tools/list, on an empty store and on one with 100,000 settled runs that
// have steps and journals, the database evicted from the page cache
// before each start; then the resident memory of an idle serve.
func figColdStart(ctx context.Context, b *bench) error {
	n := 100_000
	if b.short {
		n = 1_000
	}
	label := fmt.Sprintf("start to tools/list, %s runs, database not cached", count(n))
	b.rec.declare(8, label, "ms", atMost(100))
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
	// A few hundred runs are written through the store API, the rest
	// copied from them in SQL.
	viaAPI := min(n-1, max(n/100, 100))
	tmpl, err := echoTemplate(ctx, full, st)
	if err == nil {
		err = seedStepRuns(ctx, full, st, tmpl, viaAPI)
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = copyRuns(ctx, full, tmpl, n)
	}
	if err != nil {
		return err
	}
	where := "kept with the run in the database"
	if tmpl.inFile {
		where = "a file each under the output folder"
	}
	b.logf("fig 8: seeded %s runs in %s", count(n), time.Since(t).Round(time.Millisecond))
	b.rec.note(8, "%s settled runs of a one-step workflow whose step runs `echo` (one real run through the engine; %s more written like it through the store API: created, claimed, step started, settled with the step's result; the rest copied from those in SQL, rows as the store wrote them, with their own ids, times and change numbers, and a journal file each), each with a ledger entry and a %d-byte journal (%s), seeded in %s. Before each start the database and its WAL are evicted from the page cache (fdatasync, then posix_fadvise POSIX_FADV_DONTNEED; mincore counts what stayed). Each start is a fresh process (the binary is in the page cache after a warm-up start).",
		count(n), count(viaAPI), len(tmpl.journal), where, time.Since(t).Round(time.Millisecond))
	if _, _, err := startupTime(ctx, b, empty); err != nil { // warm-up
		return err
	}
	db := full.WS.DBPath()
	for rep := range b.reps {
		for _, c := range []struct {
			w     *benchWorkspace
			label string
			short string
			g     goal
		}{{empty, "empty store, not cached", "empty store", goal{}}, {full, label, count(n) + " runs", atMost(100)}} {
			res, tot, err := evict(c.w.WS.DBPath(), c.w.WS.DBPath()+"-wal")
			if err != nil {
				return err
			}
			if c.w == full {
				b.rec.add(8, "diagnostic: database pages still cached after eviction", "", goal{}, float64(res))
				b.rec.add(8, "diagnostic: database pages", "", goal{}, float64(tot))
			}
			d, read, err := startupTime(ctx, b, c.w)
			if err != nil {
				return fmt.Errorf("%s: %w", c.label, err)
			}
			b.rec.add(8, c.label, "ms", c.g, d)
			b.rec.add(8, "diagnostic: KiB read from the disk until tools/list, "+c.short, "KiB", goal{}, read/1024)
			b.logf("fig 8: rep %d: %s: %.1f ms (%d of %d pages cached before)", rep+1, c.label, d, res, tot)
		}
	}
	if res, tot, err := evict(db, db+"-wal"); err == nil {
		b.logf("fig 8: %d of %d pages evicted", tot-res, tot)
	}
	return serveRSS(ctx, b)
}

// startupTime starts serve and returns the milliseconds from process start
// until the tools/list answer was read, and the bytes the process had read
// from the disk by then (read_bytes of /proc/<pid>/io: page cache misses).
func startupTime(ctx context.Context, b *bench, w *benchWorkspace) (float64, float64, error) {
	bin, err := b.mcpHost(ctx)
	if err != nil {
		return 0, 0, err
	}
	h, err := startHost(hostParams{Bin: bin, Args: []string{"serve"}, StateRoot: w.StateRoot, Workspace: w.Dir, Stdio: true})
	if err != nil {
		return 0, 0, err
	}
	defer h.stop(10 * time.Second)
	if err := h.initialize(); err != nil {
		return 0, 0, err
	}
	raw, err := h.call("tools/list", map[string]any{})
	d := time.Since(h.started)
	if err != nil {
		return 0, 0, err
	}
	read, _ := diskReadBytes(h.cmd.Process.Pid)
	var list struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(raw, &list); err != nil || len(list.Tools) == 0 {
		return 0, 0, fmt.Errorf("tools/list answered no tools: %s", truncate(string(raw), 200))
	}
	return ms(d), read, nil
}

// diskReadBytes is read_bytes of /proc/<pid>/io: what the process caused
// to be read from the storage layer.
func diskReadBytes(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "read_bytes: "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("no read_bytes in /proc/%d/io", pid)
}

// serveRSS measures the resident memory of an idle serve, with no
// automation and with 10,000.
func serveRSS(ctx context.Context, b *bench) error {
	n := 10_000
	settle := 2 * time.Second
	if b.short {
		n, settle = 200, 300*time.Millisecond
	}
	withLabel := fmt.Sprintf("RSS with %s automations", count(n))
	b.rec.declare(8, "RSS idle", "MB", atMost(30))
	b.rec.declare(8, withLabel, "MB", atMost(80))
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
	b.rec.note(8, "RSS: VmRSS and VmHWM from /proc/<pid>/status of `mcp-host serve`, read %s after the handshake and tools/list, the serve idle meanwhile (it holds the scheduler lock, so it plans every automation). MB = 10^6 bytes. %s automations, each a yearly cron, seeded through the store API.", settle, count(n))
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
			b.rec.add(8, c.label, "MB", c.g, rss)
			b.rec.add(8, c.hwm, "MB", goal{}, hwm)
			b.logf("fig 8: rep %d: %s: RSS %.1f MB, HWM %.1f MB", rep+1, c.label, rss, hwm)
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
