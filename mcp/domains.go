package mcp

import (
	"context"

	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
)

// The handlers reach each domain through the small interface below: the
// methods they call of its type, nothing more. The domain types satisfy
// them (see the assertions); tests may pass their own.

// runEngine is what the run tools use of *runs.Engine.
type runEngine interface {
	Targets() runs.Targets
	Launch(ctx context.Context, p runs.LaunchParams) (*runs.Run, error)
	Get(ctx context.Context, id string) (*runs.Run, error)
	List(ctx context.Context, p runs.ListParams) ([]*runs.Run, string, error)
	Answer(ctx context.Context, p runs.AnswerParams) (*runs.Run, error)
	Cancel(ctx context.Context, id string) (*runs.Run, error)
	ReadOutput(ctx context.Context, id string, p runs.ReadParams) (*runs.Output, error)
	Follow(ctx context.Context, id string, p runs.FollowParams) (*runs.Followed, error)
	OutputSize(ctx context.Context, id string) (int64, error)
}

// runStore is what resource subscriptions poll: a run's bare record, cheaper
// than the engine's view with its steps.
type runStore interface {
	GetRun(ctx context.Context, id string) (*store.Run, error)
}

// sessionManager is what the session tools use of *sessions.Manager.
type sessionManager interface {
	Create(ctx context.Context, p sessions.CreateParams) (*store.Session, bool, error)
	List(ctx context.Context, p sessions.ListParams) (*sessions.SessionPage, error)
	Read(ctx context.Context, p sessions.ReadParams) (*sessions.MessagePage, error)
	Append(ctx context.Context, sessionID string, msgs []sessions.MessageInput) (*sessions.AppendResult, error)
	Compact(ctx context.Context, p sessions.CompactParams) (*sessions.CompactResult, error)
	Delete(ctx context.Context, id string) error
	MemoryPath(sessionID string) string
}

// automationService is what the automation tools use of
// *automations.Service.
type automationService interface {
	List(ctx context.Context, p automations.ListParams) ([]*store.Automation, error)
	Create(ctx context.Context, p automations.CreateParams) (automations.CreateResult, error)
	Update(ctx context.Context, p automations.UpdateParams) (*store.Automation, error)
	Delete(ctx context.Context, p automations.DeleteParams) (*store.Automation, error)
	Trigger(ctx context.Context, p automations.TriggerParams) (*automations.FireReport, error)
	Approve(ctx context.Context, ref string) (*store.Automation, error)
	Reject(ctx context.Context, ref string) (*store.Automation, error)
}

// auditRecorder is what the tools use of *audit.Log.
type auditRecorder interface {
	Record(ctx context.Context, e audit.Entry)
}

var (
	_ auditRecorder     = (*audit.Log)(nil)
	_ runEngine         = (*runs.Engine)(nil)
	_ runStore          = (store.RunStore)(nil)
	_ sessionManager    = (*sessions.Manager)(nil)
	_ automationService = (*automations.Service)(nil)
)
