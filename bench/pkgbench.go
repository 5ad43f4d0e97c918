package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// pkgBench is one of the Go benchmarks beside the code that the harness
// also runs (from the Cairn module's root), so that BENCHMARKS.md records
// its figures next to the command that produced them.
type pkgBench struct {
	Pkg       string // package path relative to the module root, e.g. "./runs/"
	Bench     string // the -bench pattern
	Benchtime string // -benchtime of a full run
	Count     int    // -count of a full run
	What      string // what it measures, for the report
	Goals     []pkgGoal
}

// pkgGoal is the goal of one measurement of a package benchmark, stated
// in the unit the benchmark prints it in.
type pkgGoal struct {
	Bench string // benchmark name as printed, without the -GOMAXPROCS suffix
	Unit  string // unit as printed, e.g. "p99-ms", "ratio"
	Goal  goal
}

// resolve returns the measurement label and the goal in the unit samples
// are kept in (nanoseconds for times).
func (g pkgGoal) resolve() (label, unit string, isTime bool, gl goal) {
	label, unit, isTime, v, _ := parseMetricUnit(g.Unit, g.Goal.Value)
	return label, unit, isTime, goal{Op: g.Goal.Op, Value: v}
}

// pkgBenches are run by every full run, after the numbered figures. At
// these sizes the four take about two minutes together on a 2-core
// machine, compile included, keeping the full run under ten minutes.
var pkgBenches = []pkgBench{
	{
		Pkg: "./runs/", Bench: "LaunchToSettle", Benchtime: "200x", Count: 3,
		What: "launch to settled, one run at a time; memory store as peer",
	},
	{
		Pkg: "./automations/", Bench: "CronFireLag", Benchtime: "5x", Count: 3,
		What: "fire lag of 1,000 cron automations; memory store as peer",
		Goals: []pkgGoal{
			{"BenchmarkCronFireLag/store=sqlite/automations=1000", "p99-ms", atMost(20)},
		},
	},
	{
		Pkg: "./sessions/", Bench: "Append", Benchtime: "2000x", Count: 3,
		What: "append at 10 vs 100,000 messages, and their ratio",
		Goals: []pkgGoal{
			{"BenchmarkAppendRatio", "ratio", atMost(1.2)},
		},
	},
	{
		Pkg: "./mcp/e2e/", Bench: "LaunchRunStdio", Benchtime: "2000x", Count: 3,
		What: "launch_run round trip through the binary; ping as peer",
		Goals: []pkgGoal{
			{"BenchmarkLaunchRunStdio", "p99-µs", atMost(1500)},
		},
	},
}

// args returns the go test arguments; smoke runs use one iteration once.
func (p pkgBench) args(short bool) []string {
	benchtime := p.Benchtime
	if short {
		benchtime = "1x"
	}
	return []string{"test", "-run", "^$", "-bench", p.Bench, "-benchtime", benchtime, "-count", strconv.Itoa(p.count(short)), p.Pkg}
}

// count is the -count of a run: every benchmark should report that many
// samples.
func (p pkgBench) count(short bool) int {
	if short {
		return 1
	}
	return p.Count
}

// command is args as a shell command line, for the report.
func (p pkgBench) command(short bool) string {
	var parts []string
	for _, a := range append([]string{"go"}, p.args(short)...) {
		if a == "" || strings.ContainsAny(a, "^$*?[]{}()|&;<>'\" \t\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// pkgRow is one measurement of one benchmark, a sample per -count run.
type pkgRow struct {
	Bench  string // as printed, without the -GOMAXPROCS suffix
	Metric string // label, e.g. "time/op", "p99", "ratio"
	Time   bool   // samples are nanoseconds
	row           // Unit (when not Time), Goal and Samples
}

// pkgResult is what one package benchmark gave.
type pkgResult struct {
	Spec    pkgBench
	Command string
	Count   int // the -count it ran with: the samples each row should have
	Rows    []*pkgRow
	Err     string // why (part of) it was not measured
}

// rowFor returns the row of (bench, metric), creating it on first use
// with its goal, if it has one.
func (r *pkgResult) rowFor(bench, metric string, isTime bool, unit string) *pkgRow {
	for _, x := range r.Rows {
		if x.Bench == bench && x.Metric == metric {
			return x
		}
	}
	x := &pkgRow{Bench: bench, Metric: metric, Time: isTime, row: row{Name: bench + " " + metric, Unit: unit}}
	for _, g := range r.Spec.Goals {
		if label, _, _, gl := g.resolve(); g.Bench == bench && label == metric {
			x.Goal = gl
		}
	}
	r.Rows = append(r.Rows, x)
	return x
}

// add records the figures of parsed result lines, one sample per line.
func (r *pkgResult) add(results []benchResult) {
	for _, br := range results {
		for _, m := range br.Metrics {
			label, unit, isTime, v, ok := parseMetricUnit(m.Unit, m.Value)
			if !ok {
				continue
			}
			x := r.rowFor(br.Name, label, isTime, unit)
			x.Samples = append(x.Samples, v)
		}
	}
}

// declareGoals adds an empty row for each goal nothing was measured for,
// so that it shows up as not measured.
func (r *pkgResult) declareGoals() {
	for _, g := range r.Spec.Goals {
		label, unit, isTime, _ := g.resolve()
		r.rowFor(g.Bench, label, isTime, unit)
	}
}

// runPkgBenches runs every package benchmark in turn and keeps the results
// for the report. It returns whether any failed.
func runPkgBenches(ctx context.Context, b *bench) bool {
	failed := false
	for _, p := range pkgBenches {
		if ctx.Err() != nil {
			break
		}
		res := &pkgResult{Spec: p, Command: p.command(b.short), Count: p.count(b.short)}
		b.logf("package benchmark: %s", res.Command)
		t := time.Now()
		err := runPkgBench(ctx, b, p, res)
		res.declareGoals()
		if err != nil {
			failed = true
			res.Err = err.Error()
			b.logf("package benchmark %s: not measured: %v", p.Pkg, err)
		}
		b.logf("package benchmark %s: done in %s", p.Pkg, time.Since(t).Round(time.Millisecond))
		b.pkg = append(b.pkg, res)
	}
	return failed
}

func runPkgBench(ctx context.Context, b *bench, p pkgBench, res *pkgResult) error {
	cmd := exec.CommandContext(ctx, "go", p.args(b.short)...)
	cmd.Dir = b.repo
	// The benchmarks' temporary folders (b.TempDir) go on the disk every
	// figure works on.
	cmd.Env = append(os.Environ(), "GOWORK=off", "TMPDIR="+b.disk.Dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	results, perr := parseBenchOutput(stdout.Bytes())
	res.add(results) // what a failed run measured still counts
	if runErr != nil {
		return fmt.Errorf("run %s: %w\n%s", res.Command, runErr, tail(stdout.String()+stderr.String(), 1500))
	}
	if perr != nil {
		return fmt.Errorf("read output of %s: %w", res.Command, perr)
	}
	if len(results) == 0 {
		return fmt.Errorf("run %s: no benchmark result in its output\n%s", res.Command, tail(stdout.String(), 1500))
	}
	return nil
}

// tail returns about the last n bytes of s, cut at a rune boundary.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return "…" + s[i:]
}

// benchResult is one result line of `go test -bench`.
type benchResult struct {
	Name    string // e.g. "BenchmarkAppend/at_10", without the -GOMAXPROCS suffix
	N       int    // iterations
	Metrics []benchMetric
}

// benchMetric is one value and unit pair of a result line, as printed:
// "1234 ns/op", "12.5 p99-ms", "1.02 ratio".
type benchMetric struct {
	Value float64
	Unit  string
}

var procsSuffix = regexp.MustCompile(`-[0-9]+$`)

// parseBenchOutput reads the standard output of `go test -bench`: lines
//
//	BenchmarkName/sub-2   	     200	   1234 ns/op	  12.0 p50-ms	 ...
//
// and ignores every other line (goos:, pkg:, PASS, ok, logs). The name
// loses its -GOMAXPROCS suffix (a trailing -digits; a sub-benchmark whose
// own name ends so would lose it too when GOMAXPROCS is 1). When a
// benchmark prints to stdout while it runs, its name and its figures end
// up on different lines; the figures are then given to the last name seen
// alone. A result line that starts well but does not parse is an error.
func parseBenchOutput(out []byte) ([]benchResult, error) {
	var (
		results []benchResult
		pending string // a benchmark name printed without its figures
	)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if !strings.HasPrefix(f[0], "Benchmark") {
			// Perhaps the figures of a name printed alone; a line that
			// does not parse as such is the benchmark's own output.
			if pending == "" || !isCount(f[0]) {
				continue
			}
			if r, err := parseFigures(pending, f); err == nil {
				results = append(results, r)
				pending = ""
			}
			continue
		}
		name, rest := procsSuffix.ReplaceAllString(f[0], ""), f[1:]
		if len(rest) == 0 || !isCount(rest[0]) {
			pending = name // its figures come on a later line
			continue
		}
		pending = ""
		r, err := parseFigures(name, rest)
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	return results, sc.Err()
}

func isCount(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0
}

// parseFigures parses "N v1 unit1 v2 unit2 ...".
func parseFigures(name string, f []string) (benchResult, error) {
	n, _ := strconv.Atoi(f[0])
	f = f[1:]
	if len(f) == 0 || len(f)%2 != 0 {
		return benchResult{}, fmt.Errorf("parse result of %s: want value and unit pairs, got %q", name, strings.Join(f, " "))
	}
	r := benchResult{Name: name, N: n}
	for i := 0; i < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return benchResult{}, fmt.Errorf("parse result of %s: value %q: %w", name, f[i], err)
		}
		r.Metrics = append(r.Metrics, benchMetric{Value: v, Unit: f[i+1]})
	}
	return r, nil
}

// timeUnits are the time units a metric may be reported in, in ns.
var timeUnits = map[string]float64{"ns": 1, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9}

// parseMetricUnit turns a unit as printed into a measurement label, a
// display unit, and the value (times in nanoseconds):
//
//	ns/op            -> "time/op", time
//	ns/append@10     -> "time/append@10", time
//	p99-ms, p50-µs   -> "p99", "p50", time
//	ratio, *-ratio   -> itself, "×"
//	anything else    -> itself, no unit ("fires/op", "p50/ping", "runs/s")
//
// B/op and allocs/op are left out (ok is false): the report is about time.
func parseMetricUnit(unit string, v float64) (label, display string, isTime bool, value float64, ok bool) {
	if unit == "B/op" || unit == "allocs/op" {
		return "", "", false, 0, false
	}
	if pre, per, found := strings.Cut(unit, "/"); found {
		if scale, t := timeUnits[pre]; t && per != "" {
			return "time/" + per, "", true, v * scale, true
		}
	}
	if i := strings.LastIndex(unit, "-"); i > 0 {
		if scale, t := timeUnits[unit[i+1:]]; t {
			return unit[:i], "", true, v * scale, true
		}
	}
	if unit == "ratio" || strings.HasSuffix(unit, "-ratio") {
		return unit, "×", false, v, true
	}
	return unit, "", false, v, true
}

// timeScale picks the unit to show nanosecond samples in: milliseconds
// when the row has a goal (the goals are stated in ms), else the unit
// that suits the median.
func timeScale(ns float64, hasGoal bool) (string, float64) {
	switch a := math.Abs(ns); {
	case hasGoal:
		return "ms", 1e6
	case a >= 1e9:
		return "s", 1e9
	case a >= 1e6:
		return "ms", 1e6
	case a >= 1e3:
		return "µs", 1e3
	}
	return "ns", 1
}

// shortBenches lists the benchmarks that reported fewer samples than the
// -count they ran with, as "Name (n of count)".
func (r *pkgResult) shortBenches() []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range r.Rows {
		if n := len(x.Samples); n < r.Count && !seen[x.Bench] {
			seen[x.Bench] = true
			out = append(out, fmt.Sprintf("`%s` (%d of %d)", strings.TrimPrefix(x.Bench, "Benchmark"), n, r.Count))
		}
	}
	return out
}

// samplesCell is the sample count, flagged when below the -count asked.
func samplesCell(n, want int) string {
	if want > 0 && n < want {
		return fmt.Sprintf("**%d of %d**", n, want)
	}
	return strconv.Itoa(n)
}

// pkgSection renders the "Package benchmarks" section.
func pkgSection(results []*pkgResult, short bool) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## Package benchmarks\n\n")
	w("The Go benchmarks beside the code, run by the harness after the figures, from the module root " +
		"(`GOWORK=off`, temporary folders on the disk above). Each value is the median over the `-count` runs " +
		"of the command, with the spread (min–max) across them; `time/op` is the mean over the `-benchtime` " +
		"iterations of one run, and percentiles are computed by the benchmark over its iterations. " +
		"B/op and allocs/op are left out.")
	if short {
		w(" This smoke run ran each once with one iteration (`-benchtime 1x -count 1`): the figures are not comparable to the goals.")
	}
	w("\n\n")
	w("| Package | Command | Benchmark | Measurement | Median | Spread (min–max) | Samples | Goal | Verdict |\n")
	w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range results {
		pkg, cmd := "`"+r.Spec.Pkg+"`", "`"+r.Command+"`"
		for _, x := range r.Rows {
			s := summarise(x.Samples)
			unit, g := x.Unit, x.Goal
			if x.Time {
				var scale float64
				unit, scale = timeScale(s.Median, g.set())
				s = stats{Median: s.Median / scale, Min: s.Min / scale, Max: s.Max / scale, N: s.N}
				g.Value /= scale
			}
			w("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", pkg, cmd, strings.TrimPrefix(x.Bench, "Benchmark"), x.Metric,
				formatValue(s.Median, unit), spread(s, unit), samplesCell(s.N, r.Count), g.text(unit), verdictCell(x.verdict()))
			pkg, cmd = "", ""
		}
		if len(r.Rows) == 0 {
			w("| %s | %s | | | — | — | 0 | — | %s |\n", pkg, cmd, verdictCell(verdictNotMeasured))
		}
	}
	w("\n")
	for _, r := range results {
		if short := r.shortBenches(); len(short) > 0 {
			w("**Fewer samples than `-count %d` (`%s`):** %s. Each `-count` run of a benchmark prints one result line; a missing one "+
				"means that run failed or printed no figures (see the command's output), so the median above is over fewer runs than asked.\n\n",
				r.Count, r.Spec.Pkg, strings.Join(short, ", "))
		}
		if r.Err != "" {
			w("**Not measured (`%s`):** %s\n\n", r.Spec.Pkg, oneLine(r.Err))
		}
	}
	return b.String()
}
