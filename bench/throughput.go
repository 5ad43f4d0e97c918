package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// figThroughput measures figure 1 at FULL and NORMAL: River, then ours,
// back to back in each repetition, each on a fresh database.
func figThroughput(ctx context.Context, b *bench) error {
	p := throughputParams{Launchers: 16, Jobs: 2000, Timeout: 2 * time.Minute}
	if b.short {
		p.Jobs, p.Timeout = 64, 30*time.Second
	}
	b.rec.note(1, "%s runs (jobs) per measurement, %d concurrent launchers (inserters).", count(p.Jobs), p.Launchers)
	b.rec.note(1, "The workflow: one step `exec: [\"true\"]` with `if: false`, evaluated and recorded as skipped, no process started (a zero sleep is refused and an exec would measure fork+exec).")
	b.rec.note(1, "Diagnostic rows run our workload without parts of Cairn (run journals and locks kept in memory with runs.Options.InMemory; the memory store), to show where the time goes; they have no goal.")
	b.rec.note(1, "River configuration: %s, one SQLite connection (as riversqlite requires).", riverBest)
	for _, sync := range []string{"FULL", "NORMAL"} {
		b.rec.declare(1, "ours / River, "+sync, "×", atLeast(5))
	}
	for rep := range b.reps {
		for _, sync := range []string{"FULL", "NORMAL"} {
			dir := filepath.Join(b.disk.Dir, fmt.Sprintf("tp-%s-%d", sync, rep))
			if err := os.MkdirAll(filepath.Join(dir, "river"), 0o700); err != nil {
				return err
			}
			q := p
			q.Dir, q.Synchronous = filepath.Join(dir, "river"), sync
			rv, err := riverThroughput(ctx, q, riverBest)
			if err != nil {
				return fmt.Errorf("river at %s: %w", sync, err)
			}
			b.rec.add(1, "River, "+sync, "jobs/s", goal{}, rv)
			q.Dir = filepath.Join(dir, "ours")
			ours, err := oursThroughput(ctx, b, q)
			if err != nil {
				b.logf("fig 1: rep %d %s: River %.0f jobs/s; ours: %v", rep+1, sync, rv, err)
				return fmt.Errorf("ours at %s: %w", sync, err)
			}
			b.rec.add(1, "ours, "+sync, "runs/s", goal{}, ours)
			b.rec.add(1, "ours / River, "+sync, "×", atLeast(5), ours/rv)
			b.logf("fig 1: rep %d %s: River %.0f jobs/s, ours %.0f runs/s (%.1f×)", rep+1, sync, rv, ours, ours/rv)
			os.RemoveAll(dir)
		}
		// Diagnostics: the same workload without parts of Cairn, so that
		// the report can say what limits the figure.
		for _, d := range diagnostics {
			dir := filepath.Join(b.disk.Dir, fmt.Sprintf("tp-diag-%d", rep))
			q := p
			q.Dir, q.Synchronous = dir, "FULL"
			v, _, err := oursThroughputVariant(ctx, q, d.v)
			if err != nil {
				return fmt.Errorf("ours, %s: %w", d.name, err)
			}
			b.rec.add(1, d.name, "runs/s", goal{}, v)
			os.RemoveAll(dir)
		}
	}
	return nil
}

// diagnostics of figure 1.
var diagnostics = []struct {
	name string
	v    variant
}{
	{"diagnostic: ours, FULL, journals and run locks in memory (no file per run)", variant{NoFiles: true}},
	{"diagnostic: ours, memory store, no files (the engine alone)", variant{MemoryStore: true, NoFiles: true}},
}
