package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn/internal/text"
)

// report renders BENCHMARKS.md.
type report struct {
	machine machine
	rec     *recorder
	short   bool
	reps    int
	only    map[int]bool
	elapsed time.Duration
	command string
	pkg     []*pkgResult // the package benchmarks run
	pkgRun  bool         // whether they were to run (a "Package benchmarks" section)
}

// methods says, per figure, what is measured and how: one entry per
// figure, in number order.
var methods = map[int]string{
	1: "Runs of a one-step workflow launched through the public Go API (`runs`) by 16 concurrent launchers, " +
		"each run executed to `succeeded` (its step's start and result recorded), on a fresh store per measurement. " +
		"River v0.51.2 with riversqlite and goqite v0.4.0 do the same workload in the same process run, on the same disk, " +
		"with the same driver and pragmas (WAL, the same `synchronous`, busy timeout, immediate transactions): 16 goroutines " +
		"insert no-op jobs and no-op workers work them. River runs at its best setting for each sync mode, chosen by the " +
		"trial at the start of the figure (its table is printed below). Ours goes first in even repetitions and last in odd " +
		"ones; each ratio is computed per repetition from figures measured back to back.",
	2: "Figure 1's workload at `synchronous=FULL` with everything Cairn does (SQLite, a journal file and a run lock per " +
		"run), against the engine alone: the same engine on the memory store with journals and run locks in memory. " +
		"The share says how much of the engine's speed survives the durable path; the two go first in turn.",
	3: "The real binary (`go build ./cmd/mcp-host`) runs `serve` over stdio; the harness speaks " +
		"newline-delimited JSON-RPC itself: `initialize`, `notifications/initialized`, then `tools/call " +
		"launch_run` of a one-step no-op workflow, one call at a time, measuring each call from writing the " +
		"request to reading its response (the run is durably queued when the answer is sent). The goal is " +
		"stated against the floor measured in the same repetition: one durable commit (an fsync) plus the " +
		"transport (a ping).",
	4: "1,000 cron automations (`* * * * *`) all due at the same minute boundary; the scheduler of one " +
		"peer fires them. Each fire's lag is measured when its own fire and queued run are committed " +
		"(the store call that recorded it returned) minus the nominal time.",
	5: "A run whose only step takes long is executed by one `mcp-host` process while another peer " +
		"(`mcp-host worker`) is up; the owner is SIGKILLed and the time until the peer has claimed the run " +
		"(the run's owner pid in the store becomes the peer's) is measured, over many kills.",
	6: "Ten `mcp-host serve` processes on one workspace, each with an initialized MCP client on stdio " +
		"(the harness), idle, while another `mcp-host serve` (started first, so it also holds the scheduler duty and " +
		"renews its lease every second) owns ten running runs. CPU = utime+stime from /proc/<pid>/stat over the window " +
		"(10 ms ticks), per serve; then the owner is SIGKILLed and the time until the idle serves have adopted all ten runs " +
		"is measured, as in figure 5.",
	7: "A step prints a line every 20 ms, each holding the wall-clock time it was printed " +
		"(`date +%s%N`, then `echo`); the harness, a client of `mcp-host serve` over stdio, follows the run with " +
		"`read_run_output` and `wait_seconds`, passing each `next_cursor` back at once, so it is blocked in the call " +
		"when a line comes. Latency = the time the harness read the response holding the line minus the time in the line.",
	8: "Wall time from starting `mcp-host serve` until its answer to `tools/list` (sent right after " +
		"`initialize`) is read, on a store holding 100,000 settled runs with steps and journals, and on an " +
		"empty one, the database evicted from the page cache before each start; then VmRSS and VmHWM of an " +
		"idle serve, with no automation and with 10,000 automations in the store.",
	9: "The physical limit of durable commits: append 4 KiB to a file and fsync, in a loop, in the folder " +
		"that holds every database of this run, as SQLite's WAL is written (new frames at the end of a " +
		"growing file). A commit at `synchronous=FULL` costs at least one such fsync, so durable transactions " +
		"per second cannot exceed this; only batching many operations into one commit (group commit) goes " +
		"beyond it in operations per second.",
	10: "One append of one message to a session holding 10 messages, against one append to a session " +
		"holding 100,000 messages, in the same store; the ratio of the two median times.",
	11: "Run throughput on PostgreSQL: Cairn's engine on store/postgres against River v0.51.2 with " +
		"riverpgxv5 on the same PostgreSQL server, each on a fresh database, River at its best setting.",
}

// perPackage lists the Go benchmarks beside the code, which give the same
// figures without the harness (with a peer measured in the same run): the
// ones a full run runs (pkgBenches), then the others.
func perPackage() []string {
	type line struct{ cmd, what string }
	var lines []line
	for _, p := range pkgBenches {
		lines = append(lines, line{p.command(false), p.What})
	}
	lines = append(lines, line{"go test -run '^$' -bench ToolCallStdio ./mcp/", "a tool call through the stdio transport, in process"})
	width := 0
	for _, l := range lines {
		width = max(width, len(l.cmd))
	}
	var out []string
	for _, l := range lines {
		out = append(out, fmt.Sprintf("%-*s  # %s", width, l.cmd, l.what))
	}
	return out
}

func (r report) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	m := r.machine
	w("# Benchmarks\n\n")
	w("<!-- Written by the bench harness (bench/). Do not edit by hand: `make bench` rewrites this file. -->\n\n")
	mode := "full run"
	if r.short {
		mode = "smoke run (-short: tiny sizes, not comparable to the goals)"
	}
	w("Measured %s by `%s` (%s, %d repetitions per figure, %s in all). ", m.Date.Format("2006-01-02 15:04 MST"), r.command, mode, r.reps, r.elapsed.Round(time.Second))
	w("Each value is the median of the repetitions, with the spread (min–max) across them. ")
	w("Absolute times drift on a shared machine; ratios against River measured in the same run drift much less.\n\n")

	w("## Machine\n\n| | |\n| --- | --- |\n")
	w("| CPU | %s, %d cores |\n", orDash(m.CPU), m.Cores)
	w("| Memory | %s |\n", orDash(m.MemTotal))
	w("| OS | %s |\n", orDash(m.Kernel))
	w("| Go | %s |\n", m.Go)
	w("| Disk | %s; %s |\n", m.Disk, m.Disk.Why)
	w("| Load average (1, 5, 15 min) | at the start %s; at the end %s |\n", orDash(m.LoadStart), orDash(m.LoadEnd))
	w("| Commit | %s |\n\n", orDash(m.Commit))

	w("## Results\n\n")
	w("| # | Figure | Median | Spread (min–max) | Goal | Verdict |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, f := range r.figures() {
		rows := r.rec.figRows(f.num)
		any := false
		for _, x := range rows {
			if !x.Goal.set() {
				continue
			}
			any = true
			s := summarise(x.Samples)
			w("| %d | %s: %s | %s | %s | %s | %s |\n", f.num, f.title, x.Name, formatValue(s.Median, x.Unit), spread(s, x.Unit), x.Goal.text(x.Unit), verdictCell(x.verdict()))
		}
		if !any {
			v := r.rec.figVerdict(f.num)
			head := "—"
			if len(rows) > 0 {
				s := summarise(rows[0].Samples)
				head = rows[0].Name + ": " + formatValue(s.Median, rows[0].Unit)
			}
			w("| %d | %s | %s | | no goal | %s |\n", f.num, f.title, head, verdictCell(v))
		}
	}
	w("\n")

	w("## Figures\n\n")
	for _, f := range r.figures() {
		w("### %d. %s\n\n", f.num, f.title)
		if t := methods[f.num]; t != "" {
			w("%s\n\n", t)
		}
		r.rec.mu.Lock()
		notes := slices.Clone(r.rec.notes[f.num])
		errs := slices.Clone(r.rec.errs[f.num])
		tables := slices.Clone(r.rec.tables[f.num])
		r.rec.mu.Unlock()
		for _, n := range notes {
			w("- %s\n", n)
		}
		if len(notes) > 0 {
			w("\n")
		}
		rows := detailOrder(r.rec.figRows(f.num))
		if len(rows) > 0 {
			w("| Measurement | Median | Spread (min–max) | Samples | Goal | Verdict |\n| --- | --- | --- | --- | --- | --- |\n")
			for _, x := range rows {
				s := summarise(x.Samples)
				w("| %s | %s | %s | %d | %s | %s |\n", x.Name, formatValue(s.Median, x.Unit), spread(s, x.Unit), s.N, x.Goal.text(x.Unit), verdictCell(x.verdict()))
			}
			w("\n")
		}
		for _, t := range tables {
			w("%s\n\n", strings.TrimSpace(t))
		}
		for _, e := range errs {
			w("**Not measured:** %s\n\n", oneLine(e))
		}
		switch r.rec.figVerdict(f.num) {
		case verdictMet:
			w("**Goal met.**\n\n")
		case verdictMissed:
			w("**Goal missed.** ")
			if lim := limits[f.num]; lim != nil {
				w("What limits it: %s\n\n", lim(r.rec))
			} else {
				w("What limits it: not analysed yet; profile the package benchmark (`go test -run '^$' -bench . -cpuprofile cpu.out`, then `go tool pprof -top cpu.out`).\n\n")
			}
		}
	}

	if r.pkgRun {
		w("%s", pkgSection(r.pkg, r.short))
	}

	w("## Commands\n\n")
	w("- `make bench` (= `cd bench && go run . -out ../BENCHMARKS.md`): every figure, rewrites this file; under 10 minutes on a 2-core machine.\n")
	w("- `make bench-smoke` (= `cd bench && go run . -short`): every figure at tiny sizes, report on stdout, this file untouched; CI runs it so the harness can't rot.\n")
	w("- `cd bench && go run . -only 1,2 -reps 3`: some figures only (report on stdout); `-only pkg`: the package benchmarks only.\n")
	w("- Figure 11 needs a PostgreSQL server in `%s` (skipped with a note otherwise): `eval \"$(.ci/postgres.sh start /tmp/cairn-pg)\"` starts a throwaway cluster and sets it, `.ci/postgres.sh stop /tmp/cairn-pg` removes it.\n", pgEnv)
	w("- The Go benchmarks beside the code measure the same things without the harness (a full run runs the first %d; see Package benchmarks):\n\n```sh\n", len(pkgBenches))
	for _, c := range perPackage() {
		w("%s\n", c)
	}
	w("```\n")
	return b.String()
}

// detailOrder puts rows with a goal first, then the other measurements,
// then the diagnostics, each group in the order measured.
func detailOrder(rows []*row) []*row {
	rank := func(x *row) int {
		switch {
		case x.Goal.set():
			return 0
		case strings.HasPrefix(x.Name, "diagnostic:"):
			return 2
		}
		return 1
	}
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b *row) int { return rank(a) - rank(b) })
	return out
}

// figures returns the figures of this run, in number order.
func (r report) figures() []figure {
	var fs []figure
	for _, f := range figures {
		if r.only == nil || r.only[f.num] {
			fs = append(fs, f)
		}
	}
	slices.SortFunc(fs, func(a, b figure) int { return a.num - b.num })
	return fs
}

func spread(s stats, unit string) string {
	if s.N == 0 {
		return "—"
	}
	lo := formatValue(s.Min, unit)
	if unit != "" {
		lo = strings.TrimSuffix(strings.TrimSuffix(lo, unit), " ")
	}
	return lo + " – " + formatValue(s.Max, unit)
}

func verdictCell(v verdict) string {
	switch v {
	case verdictMet:
		return "met"
	case verdictMissed:
		return "**missed**"
	case verdictNotMeasured:
		return "**not measured**"
	}
	return "—"
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// oneLine is s as one line of at most 600 runes (text.OneLine) for the
// markdown report; its own job is escaping "|", which markdown would read
// as a table cell border.
func oneLine(s string) string {
	return strings.ReplaceAll(text.OneLine(s, 600), "|", "\\|")
}
