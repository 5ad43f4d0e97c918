package store

import (
	"cmp"
	"fmt"
	"time"
)

// The run state machine, once for every backend: pure functions that take
// the record a backend read inside its write and the write's params, and
// return the next record or the refusal. A backend reads, calls one of
// them and persists what it returns; it decides nothing itself.
//
// Every next run has the next revision and UpdatedAt set to the write's
// time (the params' Now; zero: the current time, see At). The current
// record is never modified; the next one may share its byte slices.

// ReleaseParams drop an owner's claim (see RunStore.ReleaseRun).
type ReleaseParams struct {
	ID    string
	Claim string
	Now   time.Time // the write's time; zero: the current time
}

// CancelParams cancel a run (see RunStore.CancelRun).
type CancelParams struct {
	ID     string
	Reason string
	Now    time.Time // the write's time; zero: the current time
}

// next copies cur as the next revision, written at now.
func next(cur *Run, now time.Time) *Run {
	r := *cur
	r.Revision++
	r.UpdatedAt = now
	return &r
}

// CheckOwner refuses an owner's write whose claim is not the run's.
func CheckOwner(r *Run, claim string) error {
	if claim == "" || r.Claim != claim {
		return NotOwnerError(r.ID)
	}
	return nil
}

// ApplyClaim makes p's caller the owner of cur (see RunStore.ClaimRun).
// p.Now is both the write's time and the instant wake times are compared
// with.
func ApplyClaim(cur *Run, p ClaimParams) (*Claimed, error) {
	if p.Claim == "" {
		return nil, fmt.Errorf("claim run %s: empty claim token", cur.ID)
	}
	now := Millis(At(p.Now))
	if !cur.Runnable(now) {
		return nil, &RunStateError{ID: cur.ID, Status: cur.Status, Op: "claim"}
	}
	r := next(cur, now)
	r.Status = RunRunning
	r.OwnerPID, r.Claim = p.PID, p.Claim
	r.Question, r.WakeAt = nil, time.Time{}
	if r.StartedAt.IsZero() {
		r.StartedAt = now
	}
	return &Claimed{Run: r, PrevStatus: cur.Status, PrevOwnerPID: cur.OwnerPID}, nil
}

// ApplyPark makes the owner's running run wait (see RunStore.ParkRun).
func ApplyPark(cur *Run, p ParkParams) (*Run, error) {
	if err := CheckOwner(cur, p.Claim); err != nil {
		return nil, err
	}
	if cur.Status != RunRunning {
		return nil, &RunStateError{ID: cur.ID, Status: cur.Status, Op: "park"}
	}
	if p.Question == nil && p.WakeAt.IsZero() {
		return nil, fmt.Errorf("park run %s: neither a question nor a wake time", cur.ID)
	}
	if cur.CancelRequested {
		return nil, fmt.Errorf("park run %s: %w", cur.ID, ErrCancelRequested)
	}
	r := next(cur, Millis(At(p.Now)))
	r.Status = RunWaiting
	r.OwnerPID, r.Claim = 0, ""
	r.Question = p.Question.Clone()
	r.WakeAt = time.Time{}
	if !p.WakeAt.IsZero() {
		r.WakeAt = Millis(p.WakeAt)
	}
	return r, nil
}

// ApplyRelease drops the owner's claim, leaving the run as it is for
// another peer to adopt (see RunStore.ReleaseRun).
func ApplyRelease(cur *Run, p ReleaseParams) (*Run, error) {
	if err := CheckOwner(cur, p.Claim); err != nil {
		return nil, err
	}
	r := next(cur, Millis(At(p.Now)))
	r.OwnerPID, r.Claim = 0, ""
	return r, nil
}

// ApplySettle ends the owner's run (see RunStore.SettleRun). It does not
// record p.Ledger: the backend records it (with ApplyStepFinish, see
// SettleLedger) in the same write, and nothing if that is refused.
func ApplySettle(cur *Run, p SettleParams) (*Run, error) {
	if err := CheckOwner(cur, p.Claim); err != nil {
		return nil, err
	}
	if !p.Status.Settled() {
		return nil, fmt.Errorf("settle run %s: %q is not a final status", cur.ID, p.Status)
	}
	if cur.Status.Settled() {
		return nil, &RunStateError{ID: cur.ID, Status: cur.Status, Op: "settle"}
	}
	now := Millis(At(p.Now))
	r := next(cur, now)
	r.Status, r.Result, r.Error = p.Status, cloneRaw(p.Result), p.Error
	if len(p.Journal) > 0 {
		r.Journal = cloneRaw(p.Journal)
	}
	r.Claim, r.Question, r.WakeAt = "", nil, time.Time{}
	r.FinishedAt = now
	return r, nil
}

// ApplyAnswer answers the question cur waits on (see RunStore.AnswerRun).
// e is the ledger entry the question names (nil when there is none) and
// comes back with the answer.
func ApplyAnswer(cur *Run, e *LedgerEntry, p AnswerParams) (*Run, *LedgerEntry, error) {
	if cur.Status != RunWaiting || cur.Question == nil {
		return nil, nil, &RunStateError{ID: cur.ID, Status: cur.Status, Op: "answer"}
	}
	q := cur.Question
	if q.ID != p.QuestionID {
		return nil, nil, fmt.Errorf("answer run %s: question %q is no longer open: %w", cur.ID, p.QuestionID, ErrStale)
	}
	if e == nil {
		return nil, nil, fmt.Errorf("answer run %s: no ledger entry for step %s call %d", cur.ID, q.Step, q.Position)
	}
	r := next(cur, Millis(At(p.Now)))
	r.Status = RunRunning
	r.Question, r.WakeAt = nil, time.Time{}
	answered := e.Clone()
	answer := p.Answer
	answered.Answer = &answer
	return r, answered, nil
}

// ApplyCancel cancels cur (see RunStore.CancelRun): a queued or waiting
// run at once, a running one by a request its owner acts on.
func ApplyCancel(cur *Run, p CancelParams) (*Run, error) {
	now := Millis(At(p.Now))
	switch cur.Status {
	case RunQueued, RunWaiting:
		r := next(cur, now)
		r.Status = RunCancelled
		r.Error = p.Reason
		r.OwnerPID, r.Claim, r.Question, r.WakeAt = 0, "", nil, time.Time{}
		r.CancelRequested = true
		r.FinishedAt = now
		return r, nil
	case RunRunning:
		r := next(cur, now) // asked again: the revision still moves
		r.CancelRequested = true
		return r, nil
	}
	return nil, &RunStateError{ID: cur.ID, Status: cur.Status, Op: "cancel"}
}

// ApplyCancelToFinish is ApplyCancel for a run with finally steps (see
// RunStore.CancelToFinish): a waiting run is made runnable with its
// cancel requested instead of being cancelled.
func ApplyCancelToFinish(cur *Run, p CancelParams) (*Run, error) {
	if cur.Status != RunWaiting {
		return ApplyCancel(cur, p)
	}
	now := Millis(At(p.Now))
	r := next(cur, now)
	r.CancelRequested = true
	r.Question, r.WakeAt = nil, now
	return r, nil
}

// CheckCall refuses an empty step path or a position below 1. Backends
// call it before they read anything.
func CheckCall(runID, path string, pos int) error {
	if path == "" || pos < 1 {
		return fmt.Errorf("record step of run %s: bad call (path %q, position %d)", runID, path, pos)
	}
	return nil
}

// ApplyStep checks that the owner (claim) may write cur's ledger and
// returns the run with the write's revision.
func ApplyStep(cur *Run, claim string, now time.Time) (*Run, error) {
	if err := CheckOwner(cur, claim); err != nil {
		return nil, err
	}
	if cur.Status != RunRunning {
		return nil, &RunStateError{ID: cur.ID, Status: cur.Status, Op: "step"}
	}
	return next(cur, Millis(At(now))), nil
}

// ApplyStepStart records a call's start on e, the call's entry (nil when
// it has none yet; a new entry has Seq 0 for the backend to number). A
// started call starts again (Starts + 1, Answer cleared); a finished one
// is refused with an error wrapping ErrExists. The run's checks are
// ApplyStep's.
func ApplyStepStart(e *LedgerEntry, p StepStart) (*LedgerEntry, error) {
	if err := CheckCall(p.RunID, p.Path, p.Position); err != nil {
		return nil, err
	}
	if e == nil {
		e = &LedgerEntry{RunID: p.RunID, Path: p.Path, Position: p.Position}
	} else if e.State == StepFinished {
		return nil, fmt.Errorf("start step %s call %d of run %s: %w (it finished already)", p.Path, p.Position, p.RunID, ErrExists)
	} else {
		e = e.Clone()
	}
	e.Kind = p.Kind
	e.State = StepStarted
	e.Starts++
	e.Detail = cloneRaw(p.Detail)
	e.Answer = nil
	e.OwnerPID = p.PID
	e.StartedAt = Millis(At(p.Now))
	return e, nil
}

// ApplyStepFinish records a call's outcome on e, the call's entry (nil
// when the call never started; a new entry has Seq 0 for the backend to
// number). A finished call is refused with an error wrapping ErrExists.
func ApplyStepFinish(e *LedgerEntry, p StepFinish) (*LedgerEntry, error) {
	if err := CheckCall(p.RunID, p.Path, p.Position); err != nil {
		return nil, err
	}
	if e == nil {
		e = &LedgerEntry{RunID: p.RunID, Path: p.Path, Position: p.Position, Kind: p.Kind}
	} else if e.State == StepFinished {
		return nil, FinishedError(p)
	} else {
		e = e.Clone()
	}
	e.Kind = cmp.Or(e.Kind, p.Kind)
	e.State = StepFinished
	e.Status = p.Status
	e.Result = cloneRaw(p.Result)
	e.Error = p.Error
	e.FinishedAt = Millis(At(p.Now))
	return e, nil
}

// FinishedError refuses the finish p of a call whose outcome is recorded.
func FinishedError(p StepFinish) error {
	return fmt.Errorf("finish step %s call %d of run %s: %w (its outcome is recorded)", p.Path, p.Position, p.RunID, ErrExists)
}

// WriteLedger gives the outcomes an owner's write records first (see
// SettleParams.Ledger and StepStart.Ledger) the write's run, claim and,
// where they have none, its time.
func WriteLedger(runID, claim string, now time.Time, fs []StepFinish) []StepFinish {
	out := make([]StepFinish, len(fs))
	for i, f := range fs {
		f.RunID, f.Claim = runID, claim
		f.Now = cmp.Or(f.Now, now)
		out[i] = f
	}
	return out
}

// Clone copies a question (nil stays nil).
func (q *Question) Clone() *Question {
	if q == nil {
		return nil
	}
	c := *q
	c.Choices = append([]string(nil), q.Choices...)
	return &c
}

// Clone deep-copies a ledger entry.
func (e *LedgerEntry) Clone() *LedgerEntry {
	c := *e
	c.Detail = cloneRaw(e.Detail)
	c.Result = cloneRaw(e.Result)
	if e.Answer != nil {
		a := *e.Answer
		c.Answer = &a
	}
	return &c
}

// Clone deep-copies a run.
func (r *Run) Clone() *Run {
	c := *r
	c.Input = cloneRaw(r.Input)
	c.Literals = cloneRaw(r.Literals)
	c.Journal = cloneRaw(r.Journal)
	c.Result = cloneRaw(r.Result)
	c.Question = r.Question.Clone()
	return &c
}

// cloneRaw copies m; an empty message becomes nil.
func cloneRaw[T ~[]byte](m T) T {
	if len(m) == 0 {
		return nil
	}
	return append(T(nil), m...)
}
