package main

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// benchOutput is real `go test -bench` output (go1.26, 2 cores), with a
// line a benchmark printed on stdout between a name and its figures.
const benchOutput = `goos: linux
goarch: amd64
pkg: github.com/cairnhq/cairn/automations
cpu: Intel(R) Xeon(R) Processor
BenchmarkCronFireLag/store=sqlite/automations=1000-2         	       5	 245206905 ns/op	      1000 fires/op	       245.2 max-ms	       117.6 p50-ms	       245.2 p99-ms	15388608 B/op	  291972 allocs/op
BenchmarkCronFireLag/store=sqlite/automations=1000-2         	       5	 200000000 ns/op	      1000 fires/op	       200.0 max-ms	       100.0 p50-ms	        18.5 p99-ms	15388608 B/op	  291972 allocs/op
BenchmarkAppendRatio-2              	some stray output
    2000	   2963749 ns/op	         0.1927 mean-ratio	   2482870 ns/append@10	    478352 ns/append@100k	         1.05 ratio
BenchmarkLaunchRunStdio-2   	       1	   4643249 ns/op	      4641 p50-µs	         3.548 p50/ping	      4641 p99-µs
--- some log line of the benchmark
PASS
ok  	github.com/cairnhq/cairn/automations	0.432s
`

func TestParseBenchOutput(t *testing.T) {
	t.Parallel()
	got, err := parseBenchOutput([]byte(benchOutput))
	if err != nil {
		t.Fatal(err)
	}
	want := []benchResult{
		{Name: "BenchmarkCronFireLag/store=sqlite/automations=1000", N: 5, Metrics: []benchMetric{
			{245206905, "ns/op"}, {1000, "fires/op"}, {245.2, "max-ms"}, {117.6, "p50-ms"}, {245.2, "p99-ms"}, {15388608, "B/op"}, {291972, "allocs/op"},
		}},
		{Name: "BenchmarkCronFireLag/store=sqlite/automations=1000", N: 5, Metrics: []benchMetric{
			{200000000, "ns/op"}, {1000, "fires/op"}, {200, "max-ms"}, {100, "p50-ms"}, {18.5, "p99-ms"}, {15388608, "B/op"}, {291972, "allocs/op"},
		}},
		{Name: "BenchmarkAppendRatio", N: 2000, Metrics: []benchMetric{
			{2963749, "ns/op"}, {0.1927, "mean-ratio"}, {2482870, "ns/append@10"}, {478352, "ns/append@100k"}, {1.05, "ratio"},
		}},
		{Name: "BenchmarkLaunchRunStdio", N: 1, Metrics: []benchMetric{
			{4643249, "ns/op"}, {4641, "p50-µs"}, {3.548, "p50/ping"}, {4641, "p99-µs"},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseBenchOutput:\ngot  %+v\nwant %+v", got, want)
	}
}

func TestParseBenchOutputErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		out  string
	}{
		{"odd pairs", "BenchmarkX-2 \t 10 \t 123 ns/op 5\n"},
		{"bad value", "BenchmarkX-2 \t 10 \t abc ns/op\n"},
		{"no figures", "BenchmarkX-2 \t 10\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got, err := parseBenchOutput([]byte(tt.out)); err == nil {
				t.Errorf("parseBenchOutput(%q) = %+v, want an error", tt.out, got)
			}
		})
	}
	// A name printed alone takes the next line that parses as figures.
	got, err := parseBenchOutput([]byte("BenchmarkZ/a-2 \tstarting\n3 apples\n   5\t  10 ns/op\nBenchmarkW-2 \t 1 \t 2 ns/op\n"))
	want := []benchResult{
		{Name: "BenchmarkZ/a", N: 5, Metrics: []benchMetric{{10, "ns/op"}}},
		{Name: "BenchmarkW", N: 1, Metrics: []benchMetric{{2, "ns/op"}}},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseBenchOutput(split line) = %+v, %v; want %+v", got, err, want)
	}
	// Failures and names without figures are no results, not errors.
	got, err = parseBenchOutput([]byte("--- FAIL: BenchmarkX\n    x_test.go:9: boom\nBenchmarkY-2 \t\nFAIL\n"))
	if err != nil || len(got) != 0 {
		t.Errorf("parseBenchOutput(failure) = %+v, %v; want nothing and no error", got, err)
	}
}

func TestParseMetricUnit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		unit    string
		v       float64
		label   string
		display string
		isTime  bool
		value   float64
		skipped bool
	}{
		{unit: "ns/op", v: 1500, label: "time/op", isTime: true, value: 1500},
		{unit: "ns/append@10", v: 2, label: "time/append@10", isTime: true, value: 2},
		{unit: "p99-ms", v: 12.5, label: "p99", isTime: true, value: 12.5e6},
		{unit: "p50-µs", v: 800, label: "p50", isTime: true, value: 800e3},
		{unit: "ping-p50-µs", v: 3, label: "ping-p50", isTime: true, value: 3e3},
		{unit: "ratio", v: 1.1, label: "ratio", display: "×", value: 1.1},
		{unit: "mean-ratio", v: 0.9, label: "mean-ratio", display: "×", value: 0.9},
		{unit: "fires/op", v: 1000, label: "fires/op", value: 1000},
		{unit: "p50/ping", v: 3.5, label: "p50/ping", value: 3.5},
		{unit: "B/op", v: 10, skipped: true},
		{unit: "allocs/op", v: 10, skipped: true},
	}
	for _, tt := range tests {
		label, display, isTime, value, ok := parseMetricUnit(tt.unit, tt.v)
		if ok == tt.skipped {
			t.Errorf("parseMetricUnit(%q): ok %v, want %v", tt.unit, ok, !tt.skipped)
			continue
		}
		if tt.skipped {
			continue
		}
		if label != tt.label || display != tt.display || isTime != tt.isTime || math.Abs(value-tt.value) > 1e-9*math.Abs(tt.value) {
			t.Errorf("parseMetricUnit(%q, %v) = %q, %q, %v, %v; want %q, %q, %v, %v",
				tt.unit, tt.v, label, display, isTime, value, tt.label, tt.display, tt.isTime, tt.value)
		}
	}
}

func TestPkgBenchCommand(t *testing.T) {
	t.Parallel()
	p := pkgBench{Pkg: "./sessions/", Bench: "Append", Benchtime: "2000x", Count: 3}
	if got, want := p.command(false), "go test -run '^$' -bench Append -benchtime 2000x -count 3 ./sessions/"; got != want {
		t.Errorf("command = %q, want %q", got, want)
	}
	if got, want := p.command(true), "go test -run '^$' -bench Append -benchtime 1x -count 1 ./sessions/"; got != want {
		t.Errorf("smoke command = %q, want %q", got, want)
	}
}

// TestPkgSection feeds parsed output through a result into the report
// section: medians over the -count lines, goals in ms, verdicts, and a
// goal nothing was measured for.
func TestPkgSection(t *testing.T) {
	t.Parallel()
	results, err := parseBenchOutput([]byte(benchOutput))
	if err != nil {
		t.Fatal(err)
	}
	var spec pkgBench
	for _, p := range pkgBenches {
		if p.Bench == "CronFireLag" {
			spec = p
		}
	}
	spec.Goals = append(spec.Goals,
		pkgGoal{"BenchmarkAppendRatio", "ratio", atMost(1.2)},
		pkgGoal{"BenchmarkLaunchRunStdio", "p50-µs", atMost(1000)},
		pkgGoal{"BenchmarkGone", "p99-ms", atMost(5)},
	)
	res := &pkgResult{Spec: spec, Command: spec.command(false)}
	res.add(results)
	res.declareGoals()
	res.Err = "run go test: exit status 1"
	text := pkgSection([]*pkgResult{res}, false)
	for _, want := range []string{
		"## Package benchmarks",
		"| `./automations/` | `go test -run '^$' -bench CronFireLag -benchtime 5x -count 3 ./automations/` | CronFireLag/store=sqlite/automations=1000 | time/op | 223 ms | 200 – 245 ms | 2 |",
		"| CronFireLag/store=sqlite/automations=1000 | p99 | 132 ms | 18.5 – 245 ms | 2 | ≤ 20 ms | **missed** |",
		"| CronFireLag/store=sqlite/automations=1000 | fires/op | 1,000 | 1,000 – 1,000 | 2 | — | — |",
		"| AppendRatio | ratio | 1.05× | 1.05 – 1.05× | 1 | ≤ 1.2× | met |",
		"| AppendRatio | time/append@10 | 2.48 ms |",
		"| AppendRatio | time/append@100k | 478 µs |",
		"| LaunchRunStdio | p50 | 4.64 ms | 4.64 – 4.64 ms | 1 | ≤ 1 ms | **missed** |",
		"| Gone | p99 | — | — | 0 | ≤ 5 ms | **not measured** |",
		"**Not measured (`./automations/`):** run go test: exit status 1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("section lacks %q:\n%s", want, text)
		}
	}
	for _, bad := range []string{"B/op", "allocs/op"} {
		if strings.Contains(text, "| "+bad) {
			t.Errorf("section shows %s:\n%s", bad, text)
		}
	}
	// The command and package are given once per package.
	if n := strings.Count(text, "`./automations/`"); n != 2 { // the table row and the failure
		t.Errorf("package named %d times, want 2:\n%s", n, text)
	}
}

func TestParseOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		figs    map[int]bool
		pkg     bool
		wantErr bool
	}{
		{in: "", figs: nil, pkg: true},
		{in: "1,3", figs: map[int]bool{1: true, 3: true}},
		{in: "pkg", figs: map[int]bool{}, pkg: true},
		{in: "3, pkg", figs: map[int]bool{3: true}, pkg: true},
		{in: "12", wantErr: true},
		{in: "pkgs", wantErr: true},
	}
	for _, tt := range tests {
		figs, pkg, err := parseOnly(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseOnly(%q) error %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && (!reflect.DeepEqual(figs, tt.figs) || pkg != tt.pkg) {
			t.Errorf("parseOnly(%q) = %v, %v; want %v, %v", tt.in, figs, pkg, tt.figs, tt.pkg)
		}
	}
}

// TestPkgSectionFlagsFewerSamples: a benchmark that printed fewer result
// lines than -count is flagged in its rows and named in a note; one with
// every sample is not.
func TestPkgSectionFlagsFewerSamples(t *testing.T) {
	t.Parallel()
	out := "BenchmarkFull-2 \t 10\t 100 ns/op\n" +
		"BenchmarkShort-2 \t 10\t 200 ns/op\n" +
		"BenchmarkFull-2 \t 10\t 110 ns/op\n" +
		"BenchmarkShort-2 \t 10\t 210 ns/op\n" +
		"BenchmarkFull-2 \t 10\t 120 ns/op\n"
	results, err := parseBenchOutput([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	spec := pkgBench{Pkg: "./x/", Bench: ".", Benchtime: "10x", Count: 3}
	res := &pkgResult{Spec: spec, Command: spec.command(false), Count: spec.count(false)}
	res.add(results)
	text := pkgSection([]*pkgResult{res}, false)
	for _, want := range []string{
		"| Full | time/op | 110 ns | 100 – 120 ns | 3 |",
		"| Short | time/op | 205 ns | 200 – 210 ns | **2 of 3** |",
		"**Fewer samples than `-count 3` (`./x/`):** `Short` (2 of 3).",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("section lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "`Full` (") {
		t.Errorf("a benchmark with every sample is flagged:\n%s", text)
	}
	if got := res.shortBenches(); len(got) != 1 {
		t.Errorf("shortBenches = %v, want only Short", got)
	}
}
