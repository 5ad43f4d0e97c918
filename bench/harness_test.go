package main

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestSummarise(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []float64
		want stats
	}{
		{"odd", []float64{3, 1, 2}, stats{Median: 2, Min: 1, Max: 3, N: 3}},
		{"even", []float64{4, 1, 3, 2}, stats{Median: 2.5, Min: 1, Max: 4, N: 4}},
		{"one", []float64{7}, stats{Median: 7, Min: 7, Max: 7, N: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := summarise(tt.in); got != tt.want {
				t.Errorf("summarise(%v) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
	if s := summarise(nil); !math.IsNaN(s.Median) || s.N != 0 {
		t.Errorf("summarise(nil) = %+v, want NaN median and N 0", s)
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(100 - i) // 100..1, unsorted on purpose
	}
	tests := []struct {
		p    float64
		want float64
	}{{50, 50}, {99, 99}, {100, 100}, {0, 1}, {1, 1}}
	for _, tt := range tests {
		if got := percentile(xs, tt.p); got != tt.want {
			t.Errorf("percentile(1..100, %v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if xs[0] != 100 {
		t.Error("percentile sorted its argument in place")
	}
}

func TestVerdicts(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	r.add(1, "ratio FULL", "×", atLeast(5), 6)
	r.add(1, "ratio FULL", "×", atLeast(5), 4)
	r.add(1, "ratio FULL", "×", atLeast(5), 7) // median 6: met
	r.add(1, "River", "jobs/s", goal{}, 900)
	r.add(3, "p50", "ms", atMost(1), 0.5)
	r.add(3, "p99", "ms", atMost(5), 6) // missed
	r.declare(4, "p99", "ms", atMost(20))
	r.add(2, "fsync", "ops/s", goal{}, 7000)
	r.add(8, "adopt", "ms", atMost(200), 100)
	r.fail(8, errPendingForTest)

	tests := []struct {
		fig  int
		want verdict
	}{
		{1, verdictMet},
		{3, verdictMissed},
		{4, verdictNotMeasured},
		{2, verdictNone},
		{8, verdictNotMeasured}, // a failure outweighs the samples it got
	}
	for _, tt := range tests {
		if got := r.figVerdict(tt.fig); got != tt.want {
			t.Errorf("figure %d: verdict %q, want %q", tt.fig, got, tt.want)
		}
	}
}

var errPendingForTest = errors.New("the API this figure measures has not landed yet")

func TestFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    float64
		unit string
		want string
	}{
		{12345.6, "runs/s", "12,346 runs/s"},
		{5.678, "×", "5.68×"},
		{0.1234, "ms", "0.123 ms"},
		{42.26, "MB", "42.3 MB"},
		{math.NaN(), "ms", "—"},
	}
	for _, tt := range tests {
		if got := formatValue(tt.v, tt.unit); got != tt.want {
			t.Errorf("formatValue(%v, %q) = %q, want %q", tt.v, tt.unit, got, tt.want)
		}
	}
	goals := []struct {
		g    goal
		unit string
		want string
	}{
		{atLeast(5), "×", "≥ 5×"},
		{atMost(1.2), "×", "≤ 1.2×"},
		{atMost(100), "ms", "≤ 100 ms"},
		{goal{}, "ms", "—"},
	}
	for _, tt := range goals {
		if got := tt.g.text(tt.unit); got != tt.want {
			t.Errorf("goal %+v text = %q, want %q", tt.g, got, tt.want)
		}
	}
}

func TestReportNamesEveryGoalAndVerdict(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	r.add(1, "ours / River, FULL", "×", atLeast(5), 3)
	r.add(10, "ratio", "×", atMost(1.2), 1.01)
	r.fail(8, errPendingForTest)
	r.declare(8, "start to tools/list, 100,000 runs, database not cached", "ms", atMost(100))
	r.table(1, "| River setting | jobs/s |\n| --- | --- |\n| trial row | 1 |")
	text := report{rec: r, reps: 1, elapsed: time.Second, command: "cd bench && go run .", machine: machine{Cores: 2}}.markdown()
	for _, want := range []string{
		"| 1 | Throughput of a step that runs, ours vs River and goqite: ours / River, FULL | 3.00× | 3.00 – 3.00× | ≥ 5× | **missed** |",
		"| 10 | Session append at 10 vs 100,000 existing messages: ratio | 1.01× |",
		"| 8 | Cold start and resident memory of serve: start to tools/list, 100,000 runs, database not cached | — | — | ≤ 100 ms | **not measured** |",
		"| trial row | 1 |",
		"Load average",
		".ci/postgres.sh start",
		"**Goal missed.** What limits it:",
		"**Not measured:** " + errPendingForTest.Error(),
		"## Machine",
		"make bench-smoke",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
}

func TestDetailOrder(t *testing.T) {
	t.Parallel()
	rows := []*row{
		{Name: "River"},
		{Name: "diagnostic: engine alone"},
		{Name: "ratio", Goal: atLeast(5)},
		{Name: "ours"},
	}
	var got []string
	for _, x := range detailOrder(rows) {
		got = append(got, x.Name)
	}
	want := "ratio,River,ours,diagnostic: engine alone"
	if strings.Join(got, ",") != want {
		t.Errorf("detailOrder = %v, want %s", got, want)
	}
}
