package runs

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

// Ledger step statuses.
const (
	StepSucceeded = "succeeded"
	StepFailed    = "failed"
	StepSkipped   = "skipped"
	StepCancelled = "cancelled"
)

type callKey struct {
	path string
	pos  int
}

// resultOf is a finished call as expressions see it.
func resultOf(en *store.LedgerEntry) workflows.StepResult {
	rec := decodeRecord(en.Result)
	r := workflows.StepResult{
		Status:     en.Status,
		Stdout:     trimNewline(rec.Stdout),
		Stderr:     trimNewline(rec.Stderr),
		ExitCode:   rec.ExitCode,
		StatusCode: rec.StatusCode,
		Body:       rec.Body,
	}
	if rec.Answer != nil {
		r.Answer = *rec.Answer
	}
	switch workflows.StepKind(en.Kind) {
	case workflows.KindExec, workflows.KindShell:
		r.Output = workflows.ParseOutput(rec.Stdout)
	case workflows.KindHTTP:
		r.Output = workflows.ParseOutput(rec.Body)
	}
	return r
}

// trimNewline drops one trailing line break, as shell command
// substitution does, so `${{ steps.x.stdout }}` reads naturally.
func trimNewline(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return strings.TrimSuffix(s, "\r")
}

// start records a call's start (before its effect), with the pending
// outcomes.
func (x *execution) start(st *workflows.Step, pos int, detail *stepDetail) (*store.LedgerEntry, error) {
	var raw json.RawMessage
	if detail != nil {
		b, err := json.Marshal(detail)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	en, err := x.e.st.StartStep(x.sctx(), store.StepStart{RunID: x.id, Claim: x.claim, Path: st.ID, Position: pos, Kind: string(st.Kind), PID: x.e.pid, Detail: raw, Ledger: x.pending, Now: x.e.now()})
	if err != nil {
		return nil, err
	}
	x.pending = nil
	x.ledger[callKey{st.ID, pos}] = en
	return en, nil
}

// finish records a call's outcome: it is written with the run's next
// write, before anything else is dispatched (the next call's start, a
// park, a wait, or the settle).
func (x *execution) finish(st *workflows.Step, pos int, status string, rec stepRecord, errText string) flow {
	b, err := json.Marshal(x.redact.stepRecord(rec))
	if err != nil {
		return x.storeFailed("encode step result", err)
	}
	x.record(st, pos, status, b, errText)
	return flowNext
}

// record notes call pos of st as finished, in x.ledger at once and in the
// store with the next write (see pending). It returns the entry.
func (x *execution) record(st *workflows.Step, pos int, status string, result json.RawMessage, errText string) *store.LedgerEntry {
	errText = x.redact.str(errText)
	key := callKey{st.ID, pos}
	en := &store.LedgerEntry{RunID: x.id, Path: st.ID, Position: pos, Kind: string(st.Kind)}
	if old := x.ledger[key]; old != nil {
		c := *old
		en = &c
	}
	en.State, en.Status, en.Result, en.Error = store.StepFinished, status, result, errText
	now := x.e.now()
	en.FinishedAt = now.UTC().Truncate(time.Millisecond)
	x.ledger[key] = en
	x.pending = append(x.pending, store.StepFinish{RunID: x.id, Claim: x.claim, Path: st.ID, Position: pos, Kind: string(st.Kind), Status: status, Result: result, Error: errText, Now: now})
	return en
}

// writePending writes the pending call outcomes.
func (x *execution) writePending() error {
	for len(x.pending) > 0 {
		if _, err := x.e.st.FinishStep(x.sctx(), x.pending[0]); err != nil {
			return err
		}
		x.pending = x.pending[1:]
	}
	x.pending = nil
	return nil
}

// flushPending is writePending for a caller that wants a flow.
func (x *execution) flushPending() flow {
	if err := x.writePending(); err != nil {
		return x.storeFailed("record step result", err)
	}
	return flowNext
}
