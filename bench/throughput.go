package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

var syncModes = []string{"FULL", "NORMAL"}

// throughputJobs is the size of one throughput measurement: enough for a
// steady state of several seconds even for the slowest peer.
func throughputJobs(b *bench) int {
	if b.short {
		return 200
	}
	return 10000
}

// timeoutFor bounds a measurement of n jobs (River at its defaults does
// a few hundred jobs per second).
func timeoutFor(n int) time.Duration { return 30*time.Second + time.Duration(n)*10*time.Millisecond }

// figThroughput measures figure 1 at FULL and NORMAL: River's settings
// trial, then per repetition ours, River at its best setting and goqite,
// each on a fresh database, ours first in even repetitions and last in
// odd ones (River and goqite swapping places too).
func figThroughput(ctx context.Context, b *bench) error {
	n := throughputJobs(b)
	p := throughputParams{Launchers: 16, Jobs: n, Timeout: timeoutFor(n)}
	b.rec.note(1, "%s runs (jobs) per measurement, %d concurrent launchers (inserters); rate = completions between the 10th and the 90th percentile of completion times, divided by the time between them.", count(p.Jobs), p.Launchers)
	b.rec.note(1, "Ours: the workflow `step`, one `sleep: 1ns` step. It runs as any step does: its start is recorded (a store write, committed before the step proceeds), and its result (succeeded) is written with the run's end, as an exec step's is. No process is started. Completion: SettleRun returned (the end committed).")
	b.rec.note(1, "goqite v0.4.0: the same driver (modernc.org/sqlite), DSN and pragmas, one connection as its README sets it up; %d inserters send messages, %d workers each receive one (polling every %s when empty), do nothing and delete it (goqite's job runner does the same around a job); completion: the delete committed.", p.Launchers, goqiteWorkers, goqitePoll)
	b.rec.note(1, "Commits per run or job: SQLite's commit hook (sqlite3_commit_hook) on every connection of the database, counted in this process; a commit that wrote nothing (a poll that found no job) counts too. fsyncs per job: fsync and fdatasync system calls of this process during the measurement, counted by the kernel (perf stat on the syscall tracepoints), divided by the jobs.")
	for _, sync := range syncModes {
		b.rec.declare(1, "ours / River, "+sync, "×", atLeast(8))
		b.rec.declare(1, "ours / goqite, "+sync, "×", atLeast(8))
	}
	noteLoad(b, 1)
	defer noteLoad(b, 1)
	best := map[string]riverConfig{}
	for _, sync := range syncModes {
		c, err := riverBest(ctx, b, p, sync)
		if err != nil {
			return err
		}
		best[sync] = c
	}
	for rep := range b.reps {
		for _, sync := range syncModes {
			if err := throughputRep(ctx, b, p, sync, best[sync], rep); err != nil {
				return err
			}
		}
		// Diagnostic: the cheapest run, a step that is never executed.
		dir := filepath.Join(b.disk.Dir, fmt.Sprintf("tp-cheap-%d", rep))
		q := p
		q.Dir, q.Synchronous = dir, "FULL"
		r, err := oursThroughput(ctx, q, variant{Target: "noop"})
		os.RemoveAll(dir)
		if err != nil {
			return fmt.Errorf("ours, noop at FULL: %w", err)
		}
		b.rec.add(1, "diagnostic: ours, FULL, the cheapest run (`noop`: its one step has `if: false`, skipped, recorded with the end)", "runs/s", goal{}, r.Rate)
		b.rec.add(1, "diagnostic: ours, FULL, cheapest run: store writes per run", "", goal{}, r.Writes)
		b.rec.add(1, "diagnostic: ours, FULL, cheapest run: commits per run", "", goal{}, r.Commits)
	}
	return nil
}

// throughputRep is one repetition of figure 1 at sync.
func throughputRep(ctx context.Context, b *bench, p throughputParams, sync string, rc riverConfig, rep int) error {
	dir := filepath.Join(b.disk.Dir, fmt.Sprintf("tp-%s-%d", sync, rep))
	defer os.RemoveAll(dir)
	type peer struct {
		name, unit string
		run        func(throughputParams) (tpResult, error)
	}
	ours := peer{"ours", "runs/s", func(q throughputParams) (tpResult, error) { return oursThroughput(ctx, q, variant{}) }}
	rv := peer{"River", "jobs/s", func(q throughputParams) (tpResult, error) { return riverThroughput(ctx, q, rc) }}
	gq := peer{"goqite", "jobs/s", func(q throughputParams) (tpResult, error) { return goqiteThroughput(ctx, q) }}
	order := []peer{ours, rv, gq}
	if rep%2 == 1 {
		order = []peer{gq, rv, ours}
	}
	rates := map[string]float64{}
	for _, x := range order {
		q := p
		q.Dir, q.Synchronous = filepath.Join(dir, x.name), sync
		if err := os.MkdirAll(q.Dir, 0o700); err != nil {
			return err
		}
		fs := startFsyncCount()
		cpu0 := processCPU()
		r, err := x.run(q)
		cpu := (processCPU() - cpu0) / time.Duration(q.Jobs)
		fsyncs, fsErr := fs.stop()
		if err != nil {
			return fmt.Errorf("%s at %s: %w", x.name, sync, err)
		}
		rates[x.name] = r.Rate
		b.rec.add(1, x.name+", "+sync, x.unit, goal{}, r.Rate)
		per := "job"
		if x.name == "ours" {
			per = "run"
			b.rec.add(1, "ours, "+sync+": store writes per run", "", goal{}, r.Writes)
		}
		b.rec.add(1, x.name+", "+sync+": commits per "+per, "", goal{}, r.Commits)
		b.rec.add(1, x.name+", "+sync+": CPU per "+per+" (the process, from setup to teardown)", "µs", goal{}, micros(cpu))
		if fsErr == nil {
			b.rec.add(1, x.name+", "+sync+": fsyncs per "+per, "", goal{}, float64(fsyncs)/float64(q.Jobs))
		} else if rep == 0 && sync == "FULL" && x.name == "ours" {
			b.rec.note(1, "fsyncs not counted: %v", fsErr)
		}
	}
	b.rec.add(1, "ours / River, "+sync, "×", atLeast(8), rates["ours"]/rates["River"])
	b.rec.add(1, "ours / goqite, "+sync, "×", atLeast(8), rates["ours"]/rates["goqite"])
	b.logf("fig 1: rep %d %s: ours %.0f runs/s, River %.0f jobs/s (%.1f×), goqite %.0f jobs/s (%.1f×)", rep+1, sync,
		rates["ours"], rates["River"], rates["ours"]/rates["River"], rates["goqite"], rates["ours"]/rates["goqite"])
	return nil
}

// figEngineShare measures figure 2: ours at FULL (SQLite, journal files,
// run locks) against the engine alone (the memory store, journals and
// locks in memory), the same workload back to back, alternating which
// goes first.
func figEngineShare(ctx context.Context, b *bench) error {
	n := throughputJobs(b)
	p := throughputParams{Launchers: 16, Jobs: n, Timeout: timeoutFor(n)}
	b.rec.note(2, "%s runs of `step` per measurement (as in figure 1), %d launchers, steady rate (10th to 90th percentile of completions).", count(n), p.Launchers)
	b.rec.note(2, "Also measured per repetition: the CPU time of the process per run (getrusage), the share of the time the store's writer goroutine was running batches and commits (sqlite.Store.WriterStats), and, as the bound, the SQLite store alone: %d goroutines writing what a run of `step` writes (created claimed, the step's start, the settle with its outcome) with no engine.", storeOnlyWriters)
	b.rec.declare(2, "ours at FULL / engine alone", "%", atLeast(50))
	noteLoad(b, 2)
	defer noteLoad(b, 2)
	for rep := range b.reps {
		dir := filepath.Join(b.disk.Dir, fmt.Sprintf("share-%d", rep))
		q := p
		q.Dir, q.Synchronous = dir, "FULL"
		measure := []struct {
			name string
			v    variant
		}{{"ours, FULL", variant{}}, {"the engine alone (memory store, no files)", variant{MemoryStore: true, NoFiles: true}}}
		if rep%2 == 1 {
			measure[0], measure[1] = measure[1], measure[0]
		}
		rates := map[string]float64{}
		for _, m := range measure {
			r, err := oursThroughput(ctx, q, m.v)
			os.RemoveAll(dir)
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			rates[m.name] = r.Rate
			b.rec.add(2, m.name, "runs/s", goal{}, r.Rate)
			b.rec.add(2, m.name+": CPU per run (the process, every thread)", "µs", goal{}, micros(r.CPU))
			if !m.v.MemoryStore {
				b.rec.add(2, "ours, FULL: commits per run", "", goal{}, r.Commits)
				b.rec.add(2, "ours, FULL: store writes per run", "", goal{}, r.Writes)
				b.rec.add(2, "ours, FULL: writer goroutine busy (batches and commits)", "%", goal{}, 100*r.WriterBusy)
				b.rec.add(2, "ours, FULL: writer time per run", "µs", goal{}, micros(r.WriterPerRun))
				b.logf("fig 2: rep %d: ours %.0f runs/s, %.3f commits and %.2f writes per run, CPU %s per run, writer busy %.0f%%, %s per run",
					rep+1, r.Rate, r.Commits, r.Writes, r.CPU, 100*r.WriterBusy, r.WriterPerRun)
			} else {
				b.logf("fig 2: rep %d: engine alone %.0f runs/s, CPU %s per run", rep+1, r.Rate, r.CPU)
			}
		}
		// Where the rest goes: SQLite at FULL with journals and locks in
		// memory.
		r, err := oursThroughput(ctx, q, variant{NoFiles: true})
		os.RemoveAll(dir)
		if err != nil {
			return fmt.Errorf("ours without files: %w", err)
		}
		b.rec.add(2, "diagnostic: ours, FULL, journals and run locks in memory (no file per run)", "runs/s", goal{}, r.Rate)
		ours, alone := rates[measure[0].name], rates[measure[1].name]
		if rep%2 == 1 {
			ours, alone = alone, ours
		}
		// The bound: the store alone, the same three writes per run
		// without the engine.
		so, err := storeOnlyThroughput(ctx, q)
		os.RemoveAll(dir)
		if err != nil {
			return err
		}
		b.rec.add(2, fmt.Sprintf("diagnostic: the SQLite store alone at FULL (a run's three writes from %d goroutines, no engine)", storeOnlyWriters), "runs/s", goal{}, so.Rate)
		b.rec.add(2, "diagnostic: the store alone / engine alone", "%", goal{}, 100*so.Rate/alone)
		b.rec.add(2, "diagnostic: the store alone: CPU per run (the process)", "µs", goal{}, micros(so.CPU))
		b.rec.add(2, "diagnostic: the store alone: writer goroutine busy", "%", goal{}, 100*so.WriterBusy)
		b.rec.add(2, "diagnostic: the store alone: commits per run", "", goal{}, so.Commits)
		b.logf("fig 2: rep %d: store alone %.0f runs/s (%.0f%% of the engine alone), CPU %s per run, writer busy %.0f%%, %.3f commits per run",
			rep+1, so.Rate, 100*so.Rate/alone, so.CPU, 100*so.WriterBusy, so.Commits)
		b.rec.add(2, "ours at FULL / engine alone", "%", atLeast(50), 100*ours/alone)
		b.logf("fig 2: rep %d: %.1f%% (ours %.0f runs/s, engine alone %.0f, no files %.0f)", rep+1, 100*ours/alone, ours, alone, r.Rate)
	}
	return nil
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// noteLoad notes the machine's load average (/proc/loadavg) in fig: on a
// shared machine, how much CPU the measurements could get.
func noteLoad(b *bench, fig int) {
	if l := loadAverage(); l != "" {
		b.rec.note(fig, "Load average (1, 5, 15 min) at %s: %s on %d cores.", time.Now().UTC().Format("15:04:05 UTC"), l, runtime.NumCPU())
	}
}
