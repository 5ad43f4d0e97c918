package runs

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairnhq/cairn/store"
)

// Run is a run as callers see it: the stored record (id, target, status,
// input, result, error, question while waiting, owner, timestamps) and its
// steps.
type Run struct {
	store.Run
	Steps []Step `json:"steps"`
	// Stalled, set by Get and List, says why no process executes a run
	// that is not settled: "owner pid N gone since T, waiting for a peer",
	// or why a queued run waits. Empty while a process has the run.
	Stalled string `json:"stalled,omitempty"`
	// Cut lists the fields Fit shortened for a bounded reply.
	Cut []FieldCut `json:"cut,omitempty"`
}

// Step statuses beyond the ledger's (succeeded, failed, skipped, cancelled).
const (
	StepPending     = "pending"     // not reached yet
	StepRunning     = "running"     // started, the run is executing
	StepWaiting     = "waiting"     // the run is parked on this step
	StepInterrupted = "interrupted" // started, never finished, and the run ended
)

// Step is one step of a run.
type Step struct {
	ID         string    `json:"id"`
	Kind       string    `json:"kind,omitempty"`
	Status     string    `json:"status"`
	Attempts   int       `json:"attempts,omitempty"` // calls made (retries count)
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	PID        int       `json:"pid,omitempty"` // exec/shell: the step's process
	ExitCode   *int      `json:"exit_code,omitempty"`
	StatusCode int       `json:"status_code,omitempty"` // http
	Answer     *string   `json:"answer,omitempty"`      // ask
	Until      time.Time `json:"until,omitzero"`        // sleep: the deadline
	Error      string    `json:"error,omitempty"`

	// OutputTail is the end of the step's output (stdout, then stderr;
	// an http step's body): its last OutputTailLines lines, at most
	// OutputTailBytes.
	OutputTail string `json:"output_tail,omitempty"`

	// OutputFile is where a step with output: file keeps its output.
	OutputFile string `json:"output_file,omitempty"`
}

// stepRecord is a step call's result as the ledger keeps it.
type stepRecord struct {
	PID             int       `json:"pid,omitempty"`
	ExitCode        *int      `json:"exit_code,omitempty"`
	Stdout          string    `json:"stdout,omitempty"`
	Stderr          string    `json:"stderr,omitempty"`
	StdoutTruncated bool      `json:"stdout_truncated,omitempty"`
	StderrTruncated bool      `json:"stderr_truncated,omitempty"`
	Answer          *string   `json:"answer,omitempty"`
	StatusCode      int       `json:"status_code,omitempty"`
	Body            string    `json:"body,omitempty"`
	BodyTruncated   bool      `json:"body_truncated,omitempty"`
	Until           time.Time `json:"until,omitzero"`

	// Final marks a failure recorded before anything was dispatched (a
	// bad template, a condition that failed, a "fail" answer): no retry
	// follows it.
	Final bool `json:"final,omitempty"`
}

// stepDetail is what a step call records at its start.
type stepDetail struct {
	Until    time.Time       `json:"until,omitzero"`     // sleep: the deadline
	Question *store.Question `json:"question,omitempty"` // ask: the question asked
	// Supervised: exec, shell: the call runs under a step supervisor,
	// which records it in the step file before it starts the command.
	Supervised bool `json:"supervised,omitempty"`
	// Boot is the kernel's boot id when the call started (locks.BootID).
	Boot string `json:"boot,omitempty"`
}

func decodeRecord(raw json.RawMessage) stepRecord {
	var r stepRecord
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &r)
	}
	return r
}

func decodeDetail(raw json.RawMessage) stepDetail {
	var d stepDetail
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &d)
	}
	return d
}

// view builds the caller's Run from a stored one and its ledger. With
// pending set, steps not reached yet are listed from the literals.
func (e *Engine) view(ctx context.Context, r *store.Run, pending bool) (*Run, error) {
	ledger, err := e.st.Ledger(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	v := buildView(r, ledger, pending)
	e.markOutputFiles(v)
	return v, nil
}

func buildView(r *store.Run, ledger []*store.LedgerEntry, pending bool) *Run {
	latest := map[string]*store.LedgerEntry{}
	var order []string
	for _, e := range ledger {
		cur, ok := latest[e.Path]
		if !ok {
			order = append(order, e.Path)
		}
		if !ok || e.Position > cur.Position {
			latest[e.Path] = e
		}
	}
	v := &Run{Run: *r, Steps: []Step{}}
	v.Journal = nil // read with ReadOutput
	kinds := map[string]string{}
	if pending && len(r.Literals) > 0 {
		if wf, _, err := parseLiterals(r.Literals); err == nil {
			order = order[:0]
			for _, s := range slices.Concat(wf.Steps, wf.Finally) {
				order = append(order, s.ID)
				kinds[s.ID] = string(s.Kind)
			}
		}
	}
	for _, id := range order {
		e := latest[id]
		if e == nil {
			v.Steps = append(v.Steps, Step{ID: id, Kind: kinds[id], Status: StepPending})
			continue
		}
		v.Steps = append(v.Steps, stepView(r, e))
	}
	return v
}

func stepView(r *store.Run, e *store.LedgerEntry) Step {
	s := Step{ID: e.Path, Kind: e.Kind, Attempts: e.Position, StartedAt: e.StartedAt, FinishedAt: e.FinishedAt, Error: e.Error}
	rec := decodeRecord(e.Result)
	s.PID, s.ExitCode, s.StatusCode, s.Answer, s.Until = rec.PID, rec.ExitCode, rec.StatusCode, rec.Answer, rec.Until
	s.OutputTail = outputTail(rec)
	if s.Until.IsZero() {
		s.Until = decodeDetail(e.Detail).Until
	}
	if e.Starts == 0 {
		s.Attempts = 0 // recorded without running (skipped)
	}
	switch {
	case e.State == store.StepFinished:
		s.Status = e.Status
	case r.Status.Settled():
		s.Status = StepInterrupted
	case r.Status == store.RunWaiting:
		s.Status = StepWaiting
	default:
		s.Status = StepRunning
	}
	return s
}

// jsonSafe reports whether s is UTF-8 without NUL bytes.
func jsonSafe(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}
