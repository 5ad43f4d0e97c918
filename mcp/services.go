package mcp

import (
	"context"
	"encoding/json"
	"time"
)

// The MCP surface is a public API: the shapes below are what agents see
// (as structuredContent, with matching output schemas), independent of how
// the domain packages name things. Each domain is reached through a small
// interface; adapters.go maps the domain packages onto them.

// RunService is what the run tools need from the run engine.
type RunService interface {
	// Targets lists what can be launched, and the problems of workflow
	// files that did not load.
	Targets(ctx context.Context) (*TargetList, error)
	// Launch queues a run of a target (validating its input) and returns
	// it; the engine executes it.
	Launch(ctx context.Context, p LaunchParams) (*Run, error)
	// Get returns a run.
	Get(ctx context.Context, id string) (*Run, error)
	// List returns a page of runs, newest first.
	List(ctx context.Context, p ListRunsParams) (*RunPage, error)
	// Answer answers the question a waiting run asks.
	Answer(ctx context.Context, id, answer string) (*Run, error)
	// Cancel cancels a run.
	Cancel(ctx context.Context, id string) (*Run, error)
	// ReadOutput returns journal records after a cursor, waiting up to
	// p.Wait for one when there is none yet.
	ReadOutput(ctx context.Context, p ReadOutputParams) (*OutputPage, error)
	// Version returns fingerprints of a run's record and of its journal
	// that change whenever they do. It is cheap: resource subscriptions
	// poll it.
	Version(ctx context.Context, id string) (RunVersion, error)
}

// RunVersion fingerprints a run's resources.
type RunVersion struct {
	Record  string // changes when the run's record does
	Output  string // changes when its journal grows
	Settled bool   // the run reached a final status
}

// TargetList is what list_targets returns.
type TargetList struct {
	Targets []Target `json:"targets"`
	// Problems are load errors of workflow files (file, line, field).
	Problems []string `json:"problems,omitempty"`
}

// Target is a launchable workflow.
type Target struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// Triggers lists the automations the workflow file declares, as text
	// ("cron 0 3 * * 1-5 Europe/Paris", "every 30m").
	Triggers []string `json:"triggers,omitempty"`
}

// LaunchParams launch a run.
type LaunchParams struct {
	Target string
	Input  json.RawMessage // a JSON object, or nil
	// Client names the MCP client that launched it, for the run's trigger.
	Client string
}

// Run is a run as agents see it.
type Run struct {
	ID              string          `json:"id"`
	Target          string          `json:"target"`
	Status          string          `json:"status"`
	Input           json.RawMessage `json:"input,omitempty"`
	Result          json.RawMessage `json:"result,omitempty"`
	Error           string          `json:"error,omitempty"`
	Question        *Question       `json:"question,omitempty"`
	Trigger         *RunTrigger     `json:"trigger,omitempty"`
	SessionID       string          `json:"session_id,omitempty"`
	OwnerPID        int             `json:"owner_pid,omitempty"`
	CancelRequested bool            `json:"cancel_requested,omitempty"`
	WakeAt          *time.Time      `json:"wake_at,omitempty"`
	Steps           []Step          `json:"steps,omitempty"`
	Revision        int64           `json:"revision"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
	StartedAt       *time.Time      `json:"started_at,omitempty"`
	FinishedAt      *time.Time      `json:"finished_at,omitempty"`
}

// Settled reports whether the run reached a final status.
func (r *Run) Settled() bool {
	return r.Status == "succeeded" || r.Status == "failed" || r.Status == "cancelled"
}

// Question is what a waiting run asks.
type Question struct {
	ID      string   `json:"id"`
	Text    string   `json:"text"`
	Choices []string `json:"choices,omitempty"`
	Kind    string   `json:"kind,omitempty"`
	Step    string   `json:"step,omitempty"`
}

// RunTrigger says what launched a run.
type RunTrigger struct {
	Kind         string     `json:"kind"`
	AutomationID string     `json:"automation_id,omitempty"`
	Nominal      *time.Time `json:"nominal,omitempty"`
}

// Step is one step of a run.
type Step struct {
	ID string `json:"id"`
	// Kind is exec, shell, ask, sleep or http.
	Kind string `json:"kind,omitempty"`
	// Status is pending, running, waiting, succeeded, failed, skipped,
	// cancelled or interrupted.
	Status     string     `json:"status"`
	Attempts   int        `json:"attempts,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	ExitCode   *int       `json:"exit_code,omitempty"`
	StatusCode int        `json:"status_code,omitempty"`
	Answer     *string    `json:"answer,omitempty"`
	Until      *time.Time `json:"until,omitempty"`
	Error      string     `json:"error,omitempty"`
}

// ListRunsParams filter and page runs.
type ListRunsParams struct {
	Status string
	Target string
	Limit  int
	Cursor string
}

// RunPage is a page of runs.
type RunPage struct {
	Runs       []*Run `json:"runs"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// ReadOutputParams read a run's journal.
type ReadOutputParams struct {
	RunID  string
	Cursor string
	Limit  int
	// Wait is how long to wait for a record when none follows the cursor
	// yet (0: answer at once).
	Wait time.Duration
}

// OutputPage is a slice of a run's journal.
type OutputPage struct {
	RunID string `json:"run_id"`
	// Records are journal records, each a JSON object.
	Records []json.RawMessage `json:"records"`
	// NextCursor continues after the last record returned (pass it back).
	NextCursor string `json:"next_cursor"`
	// Done is true once the final record was returned: nothing will follow.
	Done bool `json:"done"`
	// Status is the run's status when the page was read.
	Status string `json:"status,omitempty"`
	// OwnerGone is the pid of a process that was executing the run and
	// vanished; a live mcp-host adopts the run shortly.
	OwnerGone int `json:"owner_gone,omitempty"`
}

// SessionService is what the session tools need from package sessions.
type SessionService interface {
	// Create makes a session, or returns the existing one with that id
	// (created false).
	Create(ctx context.Context, p CreateSessionParams) (*Session, bool, error)
	List(ctx context.Context, limit int, cursor string) (*SessionPage, error)
	// Read returns a session and a page of its messages in order.
	Read(ctx context.Context, id string, cursor string, limit int) (*SessionRead, error)
	Append(ctx context.Context, id string, msgs []NewMessage) (*Session, []*Message, error)
	Compact(ctx context.Context, p CompactParams) (*Compaction, error)
	Delete(ctx context.Context, id string) error
}

// Session is a session as agents see it.
type Session struct {
	ID           string     `json:"id"`
	Title        string     `json:"title,omitempty"`
	ParentID     string     `json:"parent_id,omitempty"`
	MessageCount int64      `json:"message_count"`
	Compactions  int64      `json:"compactions"`
	CompactedAt  *time.Time `json:"compacted_at,omitempty"`
	MemoryFile   string     `json:"memory_file,omitempty"`
	Revision     int64      `json:"revision"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
}

// SessionPage is a page of sessions.
type SessionPage struct {
	Sessions   []*Session `json:"sessions"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// SessionRead is a session and a page of its messages.
type SessionRead struct {
	Session    *Session   `json:"session"`
	Messages   []*Message `json:"messages"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// Message is one turn of a session.
type Message struct {
	ID        string          `json:"id"`
	Seq       int64           `json:"seq"`
	Role      string          `json:"role"`
	Parts     json.RawMessage `json:"parts"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
}

// NewMessage is a message to append.
type NewMessage struct {
	ID       string          `json:"id,omitempty"`
	Role     string          `json:"role"`
	Parts    json.RawMessage `json:"parts"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// CreateSessionParams create a session.
type CreateSessionParams struct {
	ID    string // "" : generated
	Title string
}

// CompactParams compact a session.
type CompactParams struct {
	SessionID string
	Summary   string
	KeepLast  int // < 0: the default
}

// Compaction is what a compaction did.
type Compaction struct {
	Session   *Session `json:"session"`
	ArchiveID string   `json:"archive_id"`
	Compacted int64    `json:"compacted"`
	// MemoryFile holds the full summary.
	MemoryFile string   `json:"memory_file,omitempty"`
	Truncated  bool     `json:"preview_truncated"`
	Pruned     []string `json:"pruned_archives,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
}

// AutomationService is what the automation tools need from package
// automations.
type AutomationService interface {
	// List returns the automations of owner, or all when owner is "".
	List(ctx context.Context, owner string) ([]*Automation, error)
	// Create makes an automation, or returns the existing one for the same
	// (owner, key) and spec (created false). A different spec is an error.
	Create(ctx context.Context, p AutomationSpec) (*Automation, bool, error)
	Update(ctx context.Context, p AutomationUpdate) (*Automation, error)
	Delete(ctx context.Context, id string) error
	// Trigger fires an automation now.
	Trigger(ctx context.Context, id string) (*Fire, error)
}

// Fire is what a manual fire did.
type Fire struct {
	AutomationID string    `json:"automation_id"`
	Key          string    `json:"key,omitempty"`
	Target       string    `json:"target,omitempty"`
	Outcome      string    `json:"outcome"` // queued, skipped, buffered, already_fired
	Nominal      time.Time `json:"nominal"`
	RunID        string    `json:"run_id,omitempty"`
	// Run is the run the fire queued, when there is one.
	Run *Run `json:"run,omitempty"`
}

// Automation is an automation as agents see it.
type Automation struct {
	ID      string          `json:"id"`
	Key     string          `json:"key"`
	Owner   string          `json:"owner"`
	Target  string          `json:"target"`
	Input   json.RawMessage `json:"input,omitempty"`
	Trigger AutomationWhen  `json:"trigger"`
	Enabled bool            `json:"enabled"`
	Note    string          `json:"note,omitempty"`
	Overlap string          `json:"overlap"`
	Missed  string          `json:"missed"`
	// Schedule is the trigger as people read it ("cron 0 3 * * 1-5
	// (Europe/Paris)").
	Schedule  string    `json:"schedule,omitempty"`
	Source    string    `json:"source,omitempty"`
	History   *History  `json:"history,omitempty"`
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// AutomationWhen is an automation's trigger: exactly one of Cron, Files,
// URL, or Every alone (an interval); Every with Files or URL is the poll
// period.
type AutomationWhen struct {
	Kind  string   `json:"kind,omitempty"` // cron, interval, files, http
	Cron  string   `json:"cron,omitempty"`
	TZ    string   `json:"tz,omitempty"`
	Every string   `json:"every,omitempty"`
	Files []string `json:"files,omitempty"`
	URL   string   `json:"url,omitempty"`
}

// History is an automation's recent activity.
type History struct {
	LastStart  *time.Time `json:"last_start,omitempty"`
	LastFinish *time.Time `json:"last_finish,omitempty"`
	LastStatus string     `json:"last_status,omitempty"`
	LastRunID  string     `json:"last_run_id,omitempty"`
	NextDue    *time.Time `json:"next_due,omitempty"`
	Fires      int64      `json:"fires"`
	Skipped    int64      `json:"skipped"`
	Missed     int64      `json:"missed"`
	LastError  string     `json:"last_error,omitempty"`
}

// AutomationSpec creates an automation.
type AutomationSpec struct {
	Key     string
	Owner   string
	Target  string
	Input   json.RawMessage
	When    AutomationWhen
	Overlap string // "" : default
	Missed  string // "" : default
}

// AutomationUpdate changes an automation; nil fields stay as they are.
type AutomationUpdate struct {
	ID      string
	Target  *string
	Input   json.RawMessage // nil: unchanged
	When    *AutomationWhen // nil: unchanged
	Overlap *string
	Missed  *string
	Enabled *bool
	Note    *string
}
