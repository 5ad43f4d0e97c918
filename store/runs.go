package store

import (
	"context"
	"encoding/json"
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

// Trigger says what launched a run.
type Trigger struct {
	Kind         string    `json:"kind"` // "manual", "automation", "mcp"
	AutomationID string    `json:"automation_id,omitempty"`
	Nominal      time.Time `json:"nominal,omitzero"` // the automation's planned time
}

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
	Revision  int64           `json:"revision"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// RunStore keeps runs: their records, literals, ledgers and questions.
type RunStore interface {
	// CreateRun stores a new run (status queued unless set). Its id must be
	// unused: a taken id is refused with an error wrapping ErrExists.
	CreateRun(ctx context.Context, r *Run) error
	// GetRun returns a run, or an error wrapping ErrNotFound.
	GetRun(ctx context.Context, id string) (*Run, error)
}
