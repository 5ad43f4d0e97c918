package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// goal is the target a figure's value must reach: value >= Value for ">=",
// value <= Value for "<=". The zero goal means the row is informational.
type goal struct {
	Op    string // ">=", "<=" or "" (no goal)
	Value float64
}

func atLeast(v float64) goal { return goal{">=", v} }
func atMost(v float64) goal  { return goal{"<=", v} }

func (g goal) set() bool { return g.Op != "" }

// met reports whether v reaches the goal.
func (g goal) met(v float64) bool {
	switch g.Op {
	case ">=":
		return v >= g.Value
	case "<=":
		return v <= g.Value
	}
	return true
}

// row is one measured quantity of a figure: one sample per repetition.
type row struct {
	Fig     int
	Name    string
	Unit    string
	Goal    goal
	Samples []float64
}

// stats summarises the samples of a row.
type stats struct {
	Median, Min, Max float64
	N                int
}

func summarise(xs []float64) stats {
	if len(xs) == 0 {
		return stats{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stats{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// percentile returns the p-th percentile (0..100) of xs by the
// nearest-rank method; xs need not be sorted.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// verdict of a row or figure.
type verdict string

const (
	verdictMet         verdict = "met"
	verdictMissed      verdict = "missed"
	verdictNone        verdict = "—" // informational, no goal
	verdictNotMeasured verdict = "not measured"
)

func (r *row) verdict() verdict {
	if !r.Goal.set() {
		return verdictNone
	}
	if len(r.Samples) == 0 {
		return verdictNotMeasured
	}
	if r.Goal.met(summarise(r.Samples).Median) {
		return verdictMet
	}
	return verdictMissed
}

// recorder collects rows and figure failures; safe for concurrent use.
type recorder struct {
	mu    sync.Mutex
	rows  []*row
	errs  map[int][]string // figure -> why (part of) it was not measured
	notes map[int][]string // figure -> facts observed during the run
	// tables are markdown tables a figure adds to its section (River's
	// settings trial), printed after its measurements.
	tables map[int][]string
}

func newRecorder() *recorder {
	return &recorder{errs: map[int][]string{}, notes: map[int][]string{}, tables: map[int][]string{}}
}

// add appends one sample to the row (fig, name), creating it on first use.
func (r *recorder) add(fig int, name, unit string, g goal, v float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.rows {
		if x.Fig == fig && x.Name == name {
			x.Samples = append(x.Samples, v)
			return
		}
	}
	r.rows = append(r.rows, &row{Fig: fig, Name: name, Unit: unit, Goal: g, Samples: []float64{v}})
}

// declare creates an empty row so that a goal shows up as not measured
// when its figure fails before producing a sample.
func (r *recorder) declare(fig int, name, unit string, g goal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.rows {
		if x.Fig == fig && x.Name == name {
			return
		}
	}
	r.rows = append(r.rows, &row{Fig: fig, Name: name, Unit: unit, Goal: g})
}

func (r *recorder) fail(fig int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs[fig] = append(r.errs[fig], err.Error())
}

// note records a fact about a figure's run (sizes, settings, paths).
func (r *recorder) note(fig int, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes[fig] = append(r.notes[fig], fmt.Sprintf(format, args...))
}

// table adds a markdown table (with its caption) to a figure's section.
func (r *recorder) table(fig int, markdown string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tables[fig] = append(r.tables[fig], markdown)
}

func (r *recorder) figRows(fig int) []*row {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*row
	for _, x := range r.rows {
		if x.Fig == fig {
			out = append(out, x)
		}
	}
	return out
}

// figVerdict is missed if any goal row missed, not measured if any goal
// row has no sample or the figure failed, else met (or — without goals).
func (r *recorder) figVerdict(fig int) verdict {
	v := verdictNone
	for _, x := range r.figRows(fig) {
		switch x.verdict() {
		case verdictMissed:
			v = verdictMissed
		case verdictNotMeasured:
			if v != verdictMissed {
				v = verdictNotMeasured
			}
		case verdictMet:
			if v == verdictNone {
				v = verdictMet
			}
		}
	}
	r.mu.Lock()
	failed := len(r.errs[fig]) > 0
	r.mu.Unlock()
	if failed && v != verdictMissed {
		v = verdictNotMeasured
	}
	return v
}

// formatValue prints v with a precision suited to its size.
func formatValue(v float64, unit string) string {
	if math.IsNaN(v) {
		return "—"
	}
	var s string
	a := math.Abs(v)
	switch {
	case a >= 1000:
		s = groupThousands(fmt.Sprintf("%.0f", v))
	case a >= 100:
		s = fmt.Sprintf("%.0f", v)
	case a >= 10:
		s = fmt.Sprintf("%.1f", v)
	case a >= 1:
		s = fmt.Sprintf("%.2f", v)
	default:
		s = fmt.Sprintf("%.3f", v)
	}
	switch unit {
	case "":
		return s
	case "×":
		return s + "×"
	}
	return s + " " + unit
}

func groupThousands(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// text prints the goal with the row's unit, e.g. "≥ 5×" or "≤ 1 ms".
func (g goal) text(unit string) string {
	if !g.set() {
		return "—"
	}
	op := "≥"
	if g.Op == "<=" {
		op = "≤"
	}
	v := strconv.FormatFloat(g.Value, 'f', -1, 64)
	switch unit {
	case "":
		return op + " " + v
	case "×":
		return op + " " + v + "×"
	}
	return op + " " + v + " " + unit
}

// count prints n with thousands separators.
func count(n int) string { return groupThousands(fmt.Sprint(n)) }
