// Command bench measures Cairn's figures on this machine, side by side with
// River (github.com/riverqueue/river with its riversqlite driver) on the
// same SQLite and the same disk, and with riverpgxv5 on the same
// PostgreSQL server, and writes BENCHMARKS.md.
//
//	cd bench && go run .                   # every figure; rewrites ../BENCHMARKS.md
//	cd bench && go run . -short            # smoke: tiny sizes, report on stdout
//	cd bench && go run . -only 1,2 -reps 3 # some figures only
//	cd bench && go run . -only pkg         # the package benchmarks only
//
// Each figure is measured several times (-reps) and reported as the median
// with the spread (min–max), next to its goal and whether the goal is met.
// Figures whose goal is missed carry what limits them. After the figures,
// a full run also runs the Go benchmarks beside the code (pkgBenches) and
// records their figures with the commands that produced them.
//
// It is its own module so that River and its dependencies stay out of
// Cairn's; Cairn itself comes from the parent folder (a replace directive).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// bench is what every figure shares.
type bench struct {
	short bool
	reps  int
	repo  string // the Cairn module's root
	disk  disk
	rec   *recorder
	start time.Time

	binOnce sync.Once
	bin     string // the built mcp-host binary
	binErr  error

	pkg []*pkgResult // the package benchmarks run, in order

	loadStart string // loadAverage when the run began
}

// figure is one numbered figure of issue 17 (the numbers follow its "What"
// list); figures run in this order, which is number order.
type figure struct {
	num   int
	title string
	run   func(context.Context, *bench) error
}

// figures: one registration line per figure, in number order.
var figures = []figure{
	{1, "Throughput of a step that runs, ours vs River and goqite", figThroughput},
	{2, "Ours at FULL against the engine alone", figEngineShare},
	{3, "launch_run round trip over stdio", figLaunchRoundTrip},
	{4, "Fire lag per fire of 1,000 cron automations due in the same minute", figFireLag},
	{5, "Dead owner to adopted", figAdoption},
	{6, "Idle serves beside a busy owner", figIdleCost},
	{7, "Output latency of read_run_output", figOutputLatency},
	{8, "Cold start and resident memory of serve", figColdStart},
	{9, "fsync ceiling of the disk, appending as the WAL does", figFsync},
	{10, "Session append at 10 vs 100,000 existing messages", figSessionAppend},
	{11, "Run throughput on PostgreSQL, ours vs River (riverpgxv5)", figPostgres},
}

func main() {
	os.Exit(run())
}

func run() int {
	var (
		short = flag.Bool("short", false, "smoke mode: every figure at tiny sizes, report on stdout (or -out), BENCHMARKS.md untouched")
		reps  = flag.Int("reps", 0, "repetitions per figure (default 5, or 2 with -short)")
		out   = flag.String("out", "", "where to write the report (default ../BENCHMARKS.md; with -short, stdout)")
		only  = flag.String("only", "", "comma-separated figure numbers to run, and \"pkg\" for the package benchmarks (default all)")
		dir   = flag.String("dir", "", "folder to create the bench's temporary folder in (default $TMPDIR when on the same disk as the working folder)")
		repo  = flag.String("repo", "..", "the Cairn repository (holding go.mod and cmd/mcp-host)")
		keep  = flag.Bool("keep", false, "keep the temporary folder")
		trial = flag.Bool("river-trial", false, "measure River's throughput under several configurations and exit")
		cpu   = flag.String("cpuprofile", "", "write a CPU profile of the harness process (the Go API figures: 1, 2, 4, 10, 11) to this file")
	)
	flag.Parse()
	if *reps <= 0 {
		*reps = 5
		if *short {
			*reps = 2
		}
	}
	want, wantPkg, err := parseOnly(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	// Smoke figures are not comparable to the goals: never let them
	// replace the real ones.
	if *short && filepath.Base(*out) == "BENCHMARKS.md" {
		fmt.Fprintln(os.Stderr, "bench: -short does not write BENCHMARKS.md (smoke sizes are not the figures); omit -out to print the report")
		return 2
	}
	// Only a complete full run replaces BENCHMARKS.md by default.
	if *out == "" && !*short && want == nil {
		*out = filepath.Join(*repo, "BENCHMARKS.md")
	}
	repoAbs, err := filepath.Abs(*repo)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	if _, err := os.Stat(filepath.Join(repoAbs, "cmd", "mcp-host")); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %s does not look like the Cairn repository (no cmd/mcp-host); use -repo\n", repoAbs)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	d, cleanup, err := chooseDir(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if *keep {
		fmt.Fprintln(os.Stderr, "bench: keeping", d.Dir)
	} else {
		defer cleanup()
	}
	b := &bench{short: *short, reps: *reps, repo: repoAbs, disk: d, rec: newRecorder(), start: time.Now(), loadStart: loadAverage()}
	b.logf("working in %s: %s", d, d.Why)

	if *trial {
		return riverTrial(ctx, b)
	}
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}

	failed := false
	for _, f := range figures {
		if want != nil && !want[f.num] {
			continue
		}
		t := time.Now()
		b.logf("fig %d: %s", f.num, f.title)
		if err := f.run(ctx, b); err != nil {
			failed = true
			b.rec.fail(f.num, err)
			b.logf("fig %d: not measured: %v", f.num, err)
		}
		b.logf("fig %d: done in %s", f.num, time.Since(t).Round(time.Millisecond))
		if ctx.Err() != nil {
			break
		}
	}
	if wantPkg && ctx.Err() == nil {
		t := time.Now()
		if runPkgBenches(ctx, b) {
			failed = true
		}
		b.logf("package benchmarks: done in %s", time.Since(t).Round(time.Millisecond))
	}

	m := describeMachine(repoAbs, d, b.loadStart)
	rep := report{
		machine: m,
		rec:     b.rec,
		short:   *short,
		reps:    *reps,
		only:    want,
		pkg:     b.pkg,
		pkgRun:  wantPkg,
		elapsed: time.Since(b.start),
		command: commandLine(),
	}
	text := rep.markdown()
	if *out == "" {
		fmt.Print(text)
	} else {
		if err := writeFileAtomic(*out, []byte(text)); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		b.logf("wrote %s", *out)
	}
	b.logf("finished in %s", time.Since(b.start).Round(time.Second))
	if failed || ctx.Err() != nil {
		return 1
	}
	return 0
}

// parseOnly reads -only: the figures wanted (nil for all) and whether the
// package benchmarks are wanted ("pkg"; always when -only is empty).
func parseOnly(s string) (map[int]bool, bool, error) {
	if s == "" {
		return nil, true, nil
	}
	want, pkg := map[int]bool{}, false
	for _, p := range strings.Split(s, ",") {
		if strings.TrimSpace(p) == "pkg" {
			pkg = true
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || !slices.ContainsFunc(figures, func(f figure) bool { return f.num == n }) {
			return nil, false, fmt.Errorf("-only: no figure %q (figures are %s, and pkg for the package benchmarks)", p, figureNumbers())
		}
		want[n] = true
	}
	return want, pkg, nil
}

// figureNumbers lists the registered figures' numbers, for messages.
func figureNumbers() string {
	var ns []string
	for _, f := range figures {
		ns = append(ns, strconv.Itoa(f.num))
	}
	return strings.Join(ns, ", ")
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

// mcpHost builds cmd/mcp-host once, from the Cairn module itself (so with
// its own go.mod, as users build it), into the bench folder.
func (b *bench) mcpHost(ctx context.Context) (string, error) {
	b.binOnce.Do(func() {
		b.bin = filepath.Join(b.disk.Dir, "mcp-host")
		t := time.Now()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.bin, "./cmd/mcp-host")
		cmd.Dir = b.repo
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.binErr = fmt.Errorf("build mcp-host: %w\n%s", err, out)
			return
		}
		b.logf("built %s in %s", b.bin, time.Since(t).Round(time.Millisecond))
	})
	return b.bin, b.binErr
}

// commandLine is how this run was invoked, for the report.
func commandLine() string {
	args := []string{"go run ."}
	for _, a := range os.Args[1:] {
		args = append(args, a)
	}
	return "cd bench && " + strings.Join(args, " ")
}

// writeFileAtomic replaces path with data durably.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".bench-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
