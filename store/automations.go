package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Trigger kinds of an automation, as stored in AutomationTrigger.Kind.
// workflows.TriggerKind is defined from them.
const (
	TriggerCron     = "cron"
	TriggerInterval = "interval"
	TriggerFiles    = "files"
	TriggerHTTP     = "http"
)

// Overlap policies: what a fire does while the automation's previous run
// has not settled.
const (
	OverlapSkip      = "skip"       // record the fire as skipped (the default)
	OverlapAllow     = "allow"      // queue another run
	OverlapBufferOne = "buffer_one" // hold one fire until the previous run settles
)

// Fire outcomes.
const (
	FireQueued   = "queued"   // a run was queued in the fire's transaction
	FireSkipped  = "skipped"  // overlap skip: the previous run had not settled
	FireBuffered = "buffered" // buffer_one: queued when the previous run settles
)

// OwnerConfig owns the automations synced from workflow files.
const OwnerConfig = "config"

// ApprovalPending marks an automation (Approval) an agent created or
// changed under the approve policy: it stays disabled until a person
// approves it.
const ApprovalPending = "pending"

// FireHistory is how many fires per automation ListFires returns; older
// ones are pruned (a backend may keep up to twice as many between prunes).
const FireHistory = 10

// Automation is a trigger that launches runs of a target: its spec (what
// people edit, versioned by Revision) and its State (what the scheduler
// records; State changes do not bump Revision, so a scheduler firing every
// second never makes a person's edit stale).
type Automation struct {
	ID      string            `json:"id"`
	Key     string            `json:"key"`
	Owner   string            `json:"owner"`
	Target  string            `json:"target"`
	Input   json.RawMessage   `json:"input"`
	Trigger AutomationTrigger `json:"trigger"`
	Enabled bool              `json:"enabled"`
	Note    string            `json:"note,omitempty"` // why it is paused
	Overlap string            `json:"overlap"`
	Missed  string            `json:"missed"` // a schedule.Missed policy
	// Source is the workflow file an OwnerConfig automation comes from.
	Source string `json:"source,omitempty"`
	// Approval is ApprovalPending while the automation waits for a
	// person's approval (it is then disabled), else "".
	Approval  string          `json:"approval,omitempty"`
	Revision  int64           `json:"revision"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	State     AutomationState `json:"state"`
}

// AutomationTrigger says when an automation fires.
type AutomationTrigger struct {
	Kind  string   `json:"kind"`            // TriggerCron, TriggerInterval, TriggerFiles, TriggerHTTP
	Cron  string   `json:"cron,omitempty"`  // cron: five fields or a descriptor
	TZ    string   `json:"tz,omitempty"`    // cron: IANA zone; "" is the machine's
	Every string   `json:"every,omitempty"` // interval; files/http: poll period (Go duration)
	Files []string `json:"files,omitempty"` // files: workspace-relative globs
	URL   string   `json:"url,omitempty"`   // http: the polled URL
}

// Equal reports whether two triggers are the same spec.
func (t AutomationTrigger) Equal(o AutomationTrigger) bool {
	return t.Kind == o.Kind && t.Cron == o.Cron && t.TZ == o.TZ && t.Every == o.Every && t.URL == o.URL && slices.Equal(t.Files, o.Files)
}

// AutomationState is an automation's history and scheduling state.
type AutomationState struct {
	LastStart  time.Time `json:"last_start,omitzero"`  // when the latest run was queued
	LastFinish time.Time `json:"last_finish,omitzero"` // when the latest run settled
	LastStatus string    `json:"last_status,omitempty"`
	LastRunID  string    `json:"last_run_id,omitempty"`
	// Cursor is the latest scheduled slot accounted for (fired, skipped or
	// missed). A scheduled fire must be after it; manual fires leave it.
	Cursor  time.Time `json:"cursor,omitzero"`
	NextDue time.Time `json:"next_due,omitzero"`
	Fires   int64     `json:"fires"`   // runs queued
	Skipped int64     `json:"skipped"` // fires refused by the overlap policy
	Missed  int64     `json:"missed"`  // slots that passed without a fire
	// Buffered is the nominal time of the fire held by buffer_one.
	Buffered time.Time `json:"buffered,omitzero"`
	// Observation is a monitor's last observation handed over (a digest):
	// a change from it launches. Empty until the baseline is recorded.
	Observation string    `json:"observation,omitempty"`
	ObservedAt  time.Time `json:"observed_at,omitzero"`
	// Pending is a monitor launch decided but not yet handed over.
	Pending   *PendingLaunch `json:"pending,omitempty"`
	LastError string         `json:"last_error,omitempty"`
	// Failures counts the fires that failed in a row: failed runs, and
	// fires that errored before queuing one (RecordParams.FireFailed). A
	// succeeded run, or resuming the automation, resets it.
	Failures int64 `json:"failures,omitempty"`
}

// PendingLaunch is a monitor's change waiting to be launched. It is
// retried until a fire hands it over.
type PendingLaunch struct {
	Nominal     time.Time `json:"nominal"`
	Observation string    `json:"observation"`
	Since       time.Time `json:"since"`
	Attempts    int       `json:"attempts"`
	Error       string    `json:"error,omitempty"`
}

// InFlight reports whether the latest run has not been recorded as settled.
func (s *AutomationState) InFlight() bool {
	return s.LastRunID != "" && s.LastFinish.Before(s.LastStart)
}

// AutomationFire is one fire of an automation, unique by (AutomationID,
// Nominal).
type AutomationFire struct {
	AutomationID string        `json:"automation_id"`
	Nominal      time.Time     `json:"nominal"`
	Actual       time.Time     `json:"actual"`
	Lag          time.Duration `json:"lag_ns"`
	Outcome      string        `json:"outcome"` // FireQueued, FireSkipped, FireBuffered
	RunID        string        `json:"run_id,omitempty"`
	Manual       bool          `json:"manual,omitempty"`
	// RunStatus is the status of the fire's run as ListFires read it (its
	// outcome once settled); empty when no run was queued or it is gone.
	RunStatus RunStatus `json:"run_status,omitempty"`
}

// FireParams describe one fire.
type FireParams struct {
	AutomationID string
	// Nominal is the slot: unique per automation. Scheduled slots are whole
	// seconds; a manual fire uses the time it was asked for.
	Nominal time.Time
	Actual  time.Time
	// Run is the run to queue (its ID, Target, Input, Literals, Trigger);
	// the store drops it when the fire is skipped or buffered.
	Run *Run
	// Manual marks a fire asked for by a person (roll, trigger): it leaves
	// the cursor alone.
	Manual bool
	// Release hands over the fire that buffer_one held at Nominal: it
	// queues Run if that fire is still buffered and the previous run has
	// settled; otherwise nothing is written (AlreadyFired).
	Release bool
	// Missed slots accounted for together with a scheduled fire.
	Missed int64
	// NextDue, when set, is recorded as the automation's next due time.
	NextDue time.Time
	// Observation, when set, is recorded as the monitor's observation and
	// any pending launch is cleared: the change is handed over.
	Observation string
	// Expect, when set, makes the fire conditional on the automation being
	// as the caller saw it when it prepared the fire (see FireExpect).
	Expect *FireExpect
	// Lease, when set, fences the fire: it is refused with a
	// *LeaseLostError, and nothing is written, unless that holding of the
	// lease is still current (checked in the fire's transaction). FireMany
	// refuses the whole operation then.
	Lease *LeaseFence
}

// FireExpect is what a fire prepared ahead of its slot assumed: a
// scheduler builds the run, Missed and NextDue of a slot before the slot
// comes, from the automation as it read it then. At the fire the store
// checks that the automation's revision (its spec: target, input,
// trigger) and its cursor are still the ones given, and that no buffered
// fire waits to be released first; otherwise the fire is refused with an
// error wrapping ErrStale, nothing is written, and the caller fires the
// slot again from a fresh read.
type FireExpect struct {
	Revision int64
	Cursor   time.Time // the stored cursor (zero before the first slot)
}

// FireOutcome is one fire's result in FireMany: Result when Err is nil.
type FireOutcome struct {
	Result FireResult
	Err    error
}

// FireResult says what a fire did.
type FireResult struct {
	// Fire is the fire recorded, or the one already recorded for the slot.
	Fire *AutomationFire
	// AlreadyFired: the slot was fired before (or the cursor is past it);
	// nothing was written or queued.
	AlreadyFired bool
	// Run is the run queued, when Fire.Outcome is FireQueued and not
	// AlreadyFired.
	Run *Run
}

// RecordParams update an automation's State without firing. Zero fields
// leave their value alone.
type RecordParams struct {
	AutomationID string
	// Cursor moves the cursor forward (never back), with Missed slots
	// counted.
	Cursor time.Time
	Missed int64
	// NextDue is recorded when set.
	NextDue time.Time
	// Finished records that run RunID settled; ignored unless RunID is the
	// automation's latest run.
	Finished *RunFinish
	// Monitor updates: when ExpectObservation is set, the record applies
	// only if the stored observation equals *ExpectObservation (else an
	// error wrapping ErrStale). Baseline sets the observation; Pending replaces the
	// pending launch; ClearPending drops it.
	ExpectObservation *string
	Baseline          string
	ObservedAt        time.Time
	Pending           *PendingLaunch
	ClearPending      bool
	// Error sets LastError ("-" clears it).
	Error string
	// FireFailed counts a fire that failed before queuing a run (Error
	// says why) in State.Failures.
	FireFailed bool
	// Pause, when set, pauses the automation in the record's transaction
	// if its failures in a row reach Pause.After.
	Pause *PauseParams
	// Lease, when set, fences the record as FireParams.Lease fences a fire.
	Lease *LeaseFence
}

// PauseParams pause an automation whose fires keep failing: a record that
// leaves an enabled automation with State.Failures >= After (After > 0)
// disables it with Note (a spec change: the revision and
// AutomationsVersion move) and enqueues Notify in the same transaction,
// skipping ids already in the outbox, so the event is never lost or
// doubled.
type PauseParams struct {
	After  int
	Note   string
	At     time.Time // the pause's time (zero: the current time)
	Notify []*Notification
}

// RunFinish is a settled run as an automation records it.
type RunFinish struct {
	RunID  string
	At     time.Time
	Status RunStatus
}

// AutomationFilter selects automations; zero fields match all.
type AutomationFilter struct {
	Owner string
	Key   string
	// After continues a listing: only automations sorting after it (by
	// owner then key) are returned. A keyset cursor, so a page follows
	// exactly after the previous one even when automations were added or
	// removed since.
	After *AutomationPosition
	// Limit caps how many are returned (0: all).
	Limit int
}

// AutomationPosition is an automation's place in a listing.
type AutomationPosition struct {
	Owner string
	Key   string
}

// ErrPaused is wrapped when a fire names a paused (disabled) automation.
var ErrPaused = errors.New("automation is paused")

// AutomationExistsError refuses a create whose (owner, key) is taken; it
// carries the existing record and wraps ErrExists.
type AutomationExistsError struct{ Existing *Automation }

func (e *AutomationExistsError) Error() string {
	return fmt.Sprintf("automation %q of owner %q already exists (%s)", e.Existing.Key, e.Existing.Owner, e.Existing.ID)
}

func (e *AutomationExistsError) Unwrap() error { return ErrExists }

// AutomationStore keeps automations, their fires and history. Methods are
// safe for concurrent use from many goroutines and processes; a missing
// automation is an error wrapping ErrNotFound (a *NotFoundError).
type AutomationStore interface {
	// CreateAutomation stores a new automation with revision 1 (ID, Key,
	// Owner and Target set; CreatedAt/UpdatedAt default to now). A taken
	// (owner, key) is refused with an *AutomationExistsError.
	CreateAutomation(ctx context.Context, a *Automation) error
	// GetAutomation returns one automation by id.
	GetAutomation(ctx context.Context, id string) (*Automation, error)
	// ListAutomations returns the automations matching f, by owner then
	// key: after f.After when set, at most f.Limit when set.
	ListAutomations(ctx context.Context, f AutomationFilter) ([]*Automation, error)
	// UpdateAutomation replaces a's spec (target, input, trigger, enabled,
	// note, overlap, missed, source) if the stored revision is expected,
	// bumping the revision; a stale one is a *StaleError. A changed
	// monitor trigger resets the observation (the next poll is a new
	// baseline); re-enabling moves the cursor to a.UpdatedAt, so slots that
	// passed while paused are not caught up. a is updated in place.
	UpdateAutomation(ctx context.Context, a *Automation, expected int64) error
	// DeleteAutomation removes an automation and its fires if the stored
	// revision is expected (0: any).
	DeleteAutomation(ctx context.Context, id string, expected int64) error
	// Fire records a fire and, unless the overlap policy holds it back,
	// queues p.Run, in one transaction, and updates the history. A slot
	// already fired, or a scheduled slot not after the cursor, gives
	// AlreadyFired and writes nothing: racing schedulers never fire one
	// slot twice. A paused automation is refused with ErrPaused.
	Fire(ctx context.Context, p FireParams) (FireResult, error)
	// FireMany records several fires in one operation (one transaction
	// and one commit), as a scheduler does for every automation due at
	// the same instant. Each fire is decided in order exactly as Fire
	// decides it (a later fire of the same automation sees the earlier
	// one) and gets its own outcome, in the order of ps: a fire refused
	// (missing or paused automation, a failed expectation, a run id
	// taken) writes nothing and leaves the others alone. The error is
	// the operation's: when it is not nil no fire was written (for a
	// *CommitError, as its outcome says) and the outcomes are nil.
	FireMany(ctx context.Context, ps []FireParams) ([]FireOutcome, error)
	// RecordAutomation updates an automation's State (see RecordParams),
	// and pauses it when p.Pause says so (see PauseParams).
	RecordAutomation(ctx context.Context, p RecordParams) (*Automation, error)
	// ListFires returns an automation's recent fires, newest first, each
	// with its run's status (at most
	// FireHistory are kept).
	ListFires(ctx context.Context, automationID string, limit int) ([]*AutomationFire, error)
	// AutomationsVersion changes whenever an automation is created,
	// updated or deleted (not when it fires), so a scheduler can notice
	// other processes' edits cheaply.
	AutomationsVersion(ctx context.Context) (int64, error)
}

// CloneAutomation deep-copies a.
func CloneAutomation(a *Automation) *Automation {
	c := *a
	c.Input = append(json.RawMessage(nil), a.Input...)
	c.Trigger.Files = slices.Clone(a.Trigger.Files)
	c.State.Pending = a.State.Pending.Clone()
	return &c
}

// Clone copies a pending launch (nil stays nil).
func (p *PendingLaunch) Clone() *PendingLaunch {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}
