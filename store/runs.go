package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RunStatus is where a run is in its life.
type RunStatus string

const (
	RunQueued    RunStatus = "queued"
	RunRunning   RunStatus = "running"
	RunWaiting   RunStatus = "waiting" // parked on a question or a durable sleep
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
	RunCancelled RunStatus = "cancelled"
)

// Settled reports whether the status is final.
func (s RunStatus) Settled() bool {
	return s == RunSucceeded || s == RunFailed || s == RunCancelled
}

// Valid reports whether s is one of the statuses above.
func (s RunStatus) Valid() bool {
	switch s {
	case RunQueued, RunRunning, RunWaiting, RunSucceeded, RunFailed, RunCancelled:
		return true
	}
	return false
}

// Trigger says what launched a run.
type Trigger struct {
	Kind         string    `json:"kind"`             // "manual", "automation", "mcp"
	Client       string    `json:"client,omitempty"` // kind mcp: the MCP client's name
	AutomationID string    `json:"automation_id,omitempty"`
	Nominal      time.Time `json:"nominal,omitzero"` // the automation's planned time
	// Principal launched the run: "human", "agent:<client>" or, for a
	// fire, the automation's owner. Empty on runs from before principals.
	Principal string `json:"principal,omitempty"`
}

// Question is what a waiting run asks. It is stored with the run while the
// run waits on it and cleared when it is answered, cancelled or timed out.
type Question struct {
	ID      string   `json:"id"`
	Text    string   `json:"text"`
	Choices []string `json:"choices,omitempty"` // empty: any answer
	// Kind is "ask" (an ask step) or "ambiguous" (a step that may or may
	// not have run: retry, skip or fail).
	Kind string `json:"kind"`
	// For is "human" when only a person may answer (QuestionForHuman);
	// an ambiguous question is always a person's.
	For string `json:"for,omitempty"`
	// Step and Position name the ledger entry the answer is written to.
	Step     string    `json:"step"`
	Position int       `json:"position"`
	AskedAt  time.Time `json:"asked_at"`
	// Deadline, when set, is when the question's default answer applies
	// (an ask step with a timeout).
	Deadline time.Time `json:"deadline,omitzero"`
}

// QuestionForHuman is Question.For of a question only a person answers.
const QuestionForHuman = "human"

// HumanOnly reports whether only a person may answer q.
func (q *Question) HumanOnly() bool { return q.For == QuestionForHuman || q.Kind == "ambiguous" }

// Run is one execution of a target.
type Run struct {
	ID     string          `json:"id"`
	Target string          `json:"target"`
	Status RunStatus       `json:"status"`
	Input  json.RawMessage `json:"input"`
	// Literals is what was locked at launch: the definition snapshot and
	// the validated input. A recovered run executes these, whatever the
	// definition file says by then.
	Literals  json.RawMessage `json:"-"`
	Trigger   Trigger         `json:"trigger"`
	SessionID string          `json:"session_id,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`

	// OwnerPID is the process executing the run (0 when none claimed it,
	// or after it parked or was released). It is for people: whether the
	// owner is alive is decided by the run's lock (the run's key in the
	// lock table locks/runs; see package runs).
	OwnerPID int `json:"owner_pid,omitempty"`
	// Claim is the owner's claim token; ledger writes and transitions by
	// the owner name it, so a process that lost the run cannot write.
	Claim string `json:"-"`
	// CancelRequested is set by a cancel of a running run; the owner
	// notices it and stops.
	CancelRequested bool `json:"cancel_requested,omitempty"`
	// Question is set while the run waits on one.
	Question *Question `json:"question,omitempty"`
	// WakeAt, on a waiting run, is when it becomes runnable again without
	// an answer (a durable sleep's end, an ask's timeout).
	WakeAt time.Time `json:"wake_at,omitzero"`
	// Journal is the output journal of a run that settled without ever
	// writing it to a file, stored by SettleRun (see SettleParams). Only
	// GetRun returns it.
	Journal []byte `json:"-"`

	Revision   int64     `json:"revision"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	StartedAt  time.Time `json:"started_at,omitzero"`  // first claim
	FinishedAt time.Time `json:"finished_at,omitzero"` // settled
}

// Runnable reports whether a peer may claim the run at now: it is queued
// or running (its owner, if any, is checked by its lock), or waiting with a
// wake time that has come.
func (r *Run) Runnable(now time.Time) bool {
	switch r.Status {
	case RunQueued, RunRunning:
		return true
	case RunWaiting:
		return !r.WakeAt.IsZero() && !r.WakeAt.After(now)
	}
	return false
}

// RunFilter selects runs for ListRuns.
type RunFilter struct {
	Status []RunStatus // any of these; empty: all
	Target string      // "" : all
	// UpdatedAfter keeps runs changed strictly after this instant.
	UpdatedAfter time.Time
	Limit        int    // <= 0: 50; at most 1000
	Cursor       string // from a previous page; "" starts at the newest
}

// RunClaim is what an owner polls about a run it executes.
type RunClaim struct {
	ID              string
	Status          RunStatus
	Claim           string
	CancelRequested bool
}

// RunChange is a run's latest change: its revision and the change's
// number (see ChangedRuns).
type RunChange struct {
	ID       string
	Revision int64
	Seq      int64
}

// MaxListLimit bounds RunFilter.Limit.
const MaxListLimit = 1000

// ClaimParams take a run over for execution. The caller must hold the
// run's lock (see Run.OwnerPID).
type ClaimParams struct {
	ID    string
	Claim string // a fresh token naming this claim
	PID   int
	// Now is the write's time, and wake times are compared with it
	// (zero: the current time).
	Now time.Time
}

// Claimed is a claimed run and what it was before.
type Claimed struct {
	Run          *Run
	PrevStatus   RunStatus
	PrevOwnerPID int
}

// ParkParams make the owner's run wait: on a question, until WakeAt, or both.
type ParkParams struct {
	ID       string
	Claim    string
	Question *Question // nil: a durable sleep
	WakeAt   time.Time // zero: only an answer wakes it
	Now      time.Time // the write's time; zero: the current time
	// Notify are enqueued in the outbox with the park (see
	// OutboxStore.EnqueueNotification): a person is told once.
	Notify []*Notification
}

// SettleParams end a run.
type SettleParams struct {
	ID     string
	Claim  string
	Status RunStatus // succeeded, failed or cancelled
	Result json.RawMessage
	Error  string
	// Notify are enqueued in the outbox with the settle (see
	// ParkParams.Notify).
	Notify []*Notification
	// Journal, when set, is the run's output journal, kept with the run:
	// an owner that wrote nothing while the run executed stores it here
	// instead of creating a file.
	Journal []byte
	// Ledger are step call outcomes recorded in the same operation, in
	// order and before the settle, each exactly as FinishStep records it
	// (their RunID and Claim are ignored: the settle's apply). An owner
	// uses it for outcomes that need no write of their own: a step
	// skipped by its condition or failed before anything was dispatched
	// (no external effect), or the outcome of the run's last call. If
	// one of them is refused, nothing is written.
	Ledger []StepFinish
	// Now is the write's time (FinishedAt; zero: the current time), and
	// that of the Ledger outcomes that have none.
	Now time.Time
}

// AnswerParams answer the question a waiting run asks.
type AnswerParams struct {
	ID         string
	QuestionID string // must be the open question's id
	Answer     string
	Now        time.Time // the write's time; zero: the current time
}

// LedgerState is how far a ledger entry got.
type LedgerState string

const (
	// StepStarted: the step was dispatched and its end is not recorded;
	// after a crash its effect is unknown.
	StepStarted LedgerState = "started"
	// StepFinished: the step's outcome is recorded.
	StepFinished LedgerState = "finished"
)

// LedgerEntry is what the ledger knows about one call of a step: the step
// path (the step id) and the call position (the attempt, from 1).
type LedgerEntry struct {
	RunID    string      `json:"run_id"`
	Path     string      `json:"path"`
	Position int         `json:"position"`
	Seq      int64       `json:"seq"` // order of first record within the run
	Kind     string      `json:"kind"`
	State    LedgerState `json:"state"`
	Status   string      `json:"status,omitempty"` // when finished: succeeded, failed, skipped, cancelled
	// Starts counts how often the call was dispatched (a re-run after a
	// crash adds one).
	Starts     int             `json:"starts"`
	Detail     json.RawMessage `json:"detail,omitempty"` // recorded at start (a sleep's deadline)
	Result     json.RawMessage `json:"result,omitempty"` // recorded at finish
	Error      string          `json:"error,omitempty"`
	Answer     *string         `json:"answer,omitempty"` // an answer to a question about this call
	OwnerPID   int             `json:"owner_pid,omitempty"`
	StartedAt  time.Time       `json:"started_at,omitzero"`
	FinishedAt time.Time       `json:"finished_at,omitzero"`
}

// StepStart records that a step call is about to be dispatched.
type StepStart struct {
	RunID    string
	Claim    string
	Path     string
	Position int
	Kind     string
	PID      int
	Detail   json.RawMessage
	// Ledger are call outcomes recorded in the same operation, in order
	// and before the start, as in SettleParams: an owner writes the
	// outcome of one call with the start of the next.
	Ledger []StepFinish
	// Now is the write's time (StartedAt; zero: the current time), and
	// that of the Ledger outcomes that have none.
	Now time.Time
}

// StepFinish records a step call's outcome.
type StepFinish struct {
	RunID    string
	Claim    string
	Path     string
	Position int
	Kind     string // used when the call was never started (a skipped step)
	Status   string
	Result   json.RawMessage
	Error    string
	Now      time.Time // the write's time (FinishedAt); zero: the current time
}

// RunStore keeps runs: their records, literals, ledgers and questions.
//
// Transitions are atomic and bump the run's revision. The owner's writes
// (ParkRun, ReleaseRun, SettleRun, StartStep, FinishStep) name its claim
// token and are refused with ErrNotOwner once another claim replaced it;
// the runs they return have no Literals (the owner has them).
// A missing run gives an error wrapping ErrNotFound; a transition the
// run's status does not allow gives a *RunStateError. Every backend
// decides transitions with the Apply* functions (see transition.go).
// ReleaseRun and CancelRun take no time and write at the current time.
type RunStore interface {
	// CreateRun stores a new run (status queued unless set), created at
	// r.CreatedAt (zero: the current time). Its id must be unused: a taken id is refused with an error wrapping ErrExists.
	CreateRun(ctx context.Context, r *Run) error
	// GetRun returns a run, or an error wrapping ErrNotFound.
	GetRun(ctx context.Context, id string) (*Run, error)
	// ListRuns returns runs newest first (by creation time, then id) and
	// the cursor of the next page ("" when this is the last one).
	ListRuns(ctx context.Context, f RunFilter) ([]*Run, string, error)
	// RunnableRuns returns up to limit runs that Runnable(now) holds for:
	// queued and due waiting runs first, then running ones, oldest first
	// in each group. Their Literals are left empty (read the run itself).
	RunnableRuns(ctx context.Context, now time.Time, limit int) ([]*Run, error)
	// CountPending counts runs that still need a process: queued, running,
	// and waiting ones with a wake time.
	CountPending(ctx context.Context) (int, error)
	// RunClaims returns the status, claim and cancel request of those of
	// the runs ids that exist, in no particular order: one query for all
	// the runs an owner executes, to notice a cancel requested by another
	// process or a run taken over.
	RunClaims(ctx context.Context, ids []string) ([]RunClaim, error)
	// ChangedRuns returns the runs whose latest change is numbered after
	// after, in change order, at most limit (<= 0: MaxListLimit). Every
	// write to a run (its creation included) gives it the next number of
	// one sequence per store, in commit order: a poller that passes the
	// last Seq it saw misses no change and sees none twice. Peers poll it
	// to notice the changes other processes make.
	ChangedRuns(ctx context.Context, after int64, limit int) ([]RunChange, error)
	// LastRunChange returns the number of the latest change (0 before
	// the first): where a poller starts.
	LastRunChange(ctx context.Context) (int64, error)

	// ClaimRun makes the caller the run's owner: status running, OwnerPID
	// and Claim set; a question whose wake time came is cleared. Refused
	// with a *RunStateError unless the run is Runnable(p.Now).
	ClaimRun(ctx context.Context, p ClaimParams) (*Claimed, error)
	// ParkRun makes the owner's running run wait (status waiting) and
	// drops its ownership. A run whose cancel was requested is not parked:
	// the error wraps ErrCancelRequested.
	ParkRun(ctx context.Context, p ParkParams) (*Run, error)
	// ReleaseRun drops the owner's claim and leaves the run running, for
	// another peer to adopt.
	ReleaseRun(ctx context.Context, id, claim string) (*Run, error)
	// SettleRun ends the owner's run, recording p.Ledger first.
	SettleRun(ctx context.Context, p SettleParams) (*Run, error)
	// AnswerRun stores an answer in the ledger entry the open question
	// names, clears the question and makes the run running again (without
	// an owner: a peer claims it). A run that is not waiting on a question
	// gives a *RunStateError; a question id that is not the open one gives
	// an error wrapping ErrStale.
	AnswerRun(ctx context.Context, p AnswerParams) (*Run, error)
	// CancelRun cancels a run: a queued or waiting one is cancelled at once
	// (its question closed); a running one gets CancelRequested for its
	// owner to act on. A settled run gives a *RunStateError.
	CancelRun(ctx context.Context, id, reason string) (*Run, error)
	// CancelToFinish is CancelRun for a run with `finally:` steps to run:
	// a waiting run is not cancelled at once but gets CancelRequested, its
	// question closed and its wake time set to now, so a peer claims it,
	// runs the finally steps and settles it cancelled.
	CancelToFinish(ctx context.Context, id, reason string) (*Run, error)

	// StartStep records a step call's start (before its effect), after
	// p.Ledger. A call already started is started again (Starts + 1,
	// Answer cleared); a finished one is refused with an error wrapping
	// ErrExists.
	StartStep(ctx context.Context, p StepStart) (*LedgerEntry, error)
	// FinishStep records a step call's outcome, creating the entry when
	// the call never started. A finished call is refused with ErrExists.
	FinishStep(ctx context.Context, p StepFinish) (*LedgerEntry, error)
	// Ledger returns a run's ledger in record order (empty for a run
	// without entries; ErrNotFound for a missing run).
	Ledger(ctx context.Context, runID string) ([]*LedgerEntry, error)

	// DeleteRuns deletes the settled runs among ids with their ledgers
	// and the fire history rows that name them, in transactions of at
	// most DeleteBatch runs. Runs that are not settled are kept (Active);
	// ids of no run are reported (Missing). After an error, the batches
	// committed before it stay deleted and are listed in Deleted. Journal
	// files are the caller's (see package retention).
	DeleteRuns(ctx context.Context, ids []string) (Deleted, error)
}

var (
	// ErrNotOwner is wrapped when an owner's write names a claim that is
	// no longer the run's: another process took the run over.
	ErrNotOwner = errors.New("not the run's owner")
	// ErrRunState is wrapped by *RunStateError.
	ErrRunState = errors.New("run status does not allow this")
	// ErrCancelRequested is wrapped when an owner tries to park a run
	// whose cancel was requested: it must settle it cancelled instead.
	ErrCancelRequested = errors.New("cancel requested")
)

// RunStateError refuses an operation the run's status does not allow.
type RunStateError struct {
	ID     string
	Status RunStatus
	Op     string // "answer", "cancel", "claim", "park", "settle", "step"
}

func (e *RunStateError) Error() string {
	switch e.Op {
	case "answer":
		if e.Status == RunWaiting {
			return fmt.Sprintf("run %s is not waiting for an answer (it is sleeping)", e.ID)
		}
		return fmt.Sprintf("run %s is not waiting (status: %s)", e.ID, e.Status)
	case "cancel":
		return fmt.Sprintf("run %s is already %s", e.ID, e.Status)
	}
	return fmt.Sprintf("%s run %s: not allowed in status %s", e.Op, e.ID, e.Status)
}

func (e *RunStateError) Unwrap() error { return ErrRunState }

// NotOwnerError names the run whose claim was replaced.
func NotOwnerError(id string) error {
	return fmt.Errorf("run %s: %w (another process took it over)", id, ErrNotOwner)
}

// SetCreateDefaults fills what a new run gets from every backend: status
// queued unless set, revision 1, timestamps (milliseconds, UTC: CreatedAt,
// the current time when it is zero) and an empty input object.
func (r *Run) SetCreateDefaults() {
	r.CreatedAt = Millis(At(r.CreatedAt))
	if r.Status == "" {
		r.Status = RunQueued
	}
	r.UpdatedAt, r.Revision = r.CreatedAt, 1
	if len(r.Input) == 0 {
		r.Input = json.RawMessage("{}")
	}
}

// ListLimit is f's page size: Limit, 50 when unset, at most MaxListLimit.
func (f RunFilter) ListLimit() int {
	if f.Limit <= 0 {
		return 50
	}
	return min(f.Limit, MaxListLimit)
}

// RunCursor is the cursor of the page after r (see RunFilter.Cursor): its
// creation time and id.
func RunCursor(r *Run) string {
	return strconv.FormatInt(r.CreatedAt.UnixMilli(), 10) + "." + r.ID
}

// ParseRunCursor reads a RunCursor: the creation time (unix
// milliseconds) and id of the last run of the previous page.
func ParseRunCursor(c string) (createdMS int64, id string, err error) {
	ms, id, ok := strings.Cut(c, ".")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || id == "" {
		return 0, "", fmt.Errorf("list runs: invalid cursor %q", c)
	}
	return n, id, nil
}

// RunPage cuts runs, read with one more than limit, to a page of limit
// and returns the cursor of the next page ("" when this is the last).
func RunPage(runs []*Run, limit int) ([]*Run, string) {
	if len(runs) <= limit {
		return runs, ""
	}
	runs = runs[:limit]
	return runs, RunCursor(runs[limit-1])
}
