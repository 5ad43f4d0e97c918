package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

// The tools answer with the domain types (*runs.Run, *store.Message,
// runs.Record) where agents see the same shape. The types below exist only
// where the wire shape differs: a page with next_cursor, a session with its
// summary flattened and its memory file, an automation with its history and
// schedule. Their output schemas are generated from them (see schema.go).

// deletedOut is what delete_session and delete_automation return.
type deletedOut struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// targetList is what list_targets returns.
type targetList struct {
	Targets    []target `json:"targets"`
	Problems   []string `json:"problems,omitempty" jsonschema:"Load errors of workflow files that did not load (file, line, field), on the first page."`
	Warnings   []string `json:"warnings,omitempty" jsonschema:"Problems of workflows that load (file, line, field): a shell step interpolating input without shellQuote, on the first page."`
	NextCursor string   `json:"next_cursor,omitempty" jsonschema:"More targets follow: pass it back as cursor."`
}

// target is a launchable workflow.
type target struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty" jsonschema:"The JSON Schema (an object) that the target's input must match."`
	Triggers    []string        `json:"triggers,omitempty" jsonschema:"The automations the workflow file declares, as people read them (\"cron 0 3 * * 1-5 (Europe/Paris)\")."`
}

func newTargetList(t runs.Targets) *targetList {
	wfs, problems := t.List()
	out := &targetList{Targets: make([]target, 0, len(wfs))}
	for name, wf := range wfs {
		tg := target{Name: name, Description: wf.Description, InputSchema: wf.InputSchema()}
		for _, tr := range wf.On {
			tg.Triggers = append(tg.Triggers, describeTrigger(tr))
		}
		for _, w := range wf.Warnings {
			out.Warnings = append(out.Warnings, w.Error())
		}
		out.Targets = append(out.Targets, tg)
	}
	slices.SortFunc(out.Targets, func(x, y target) int { return strings.Compare(x.Name, y.Name) })
	slices.Sort(out.Warnings)
	for _, p := range problems {
		out.Problems = append(out.Problems, p.Error())
	}
	return out
}

// describeTrigger writes a workflow file's trigger as the automation it
// declares is described (automations.Describe), poll defaults included.
func describeTrigger(t workflows.Trigger) string {
	at := store.AutomationTrigger{Kind: string(t.Kind), Cron: t.Cron, TZ: t.TZ, Files: t.Files, URL: t.URL}
	every := t.Every
	switch t.Kind {
	case workflows.TriggerEvery:
		at.Kind = store.TriggerInterval
	case workflows.TriggerFiles:
		every = cmp.Or(every, automations.DefaultFilesEvery)
	case workflows.TriggerHTTP:
		every = cmp.Or(every, automations.DefaultHTTPEvery)
	}
	if every > 0 {
		at.Every = automations.FormatEvery(every)
	}
	return automations.Describe(at)
}

// runPage is a page of runs.
type runPage struct {
	Runs       []*runs.Run `json:"runs"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// outputPage is a slice of a run's journal.
type outputPage struct {
	RunID   string         `json:"run_id"`
	Records []outputRecord `json:"records"`
	// NextCursor continues after the last record returned.
	NextCursor string `json:"next_cursor" jsonschema:"Continues after the last record returned: pass it back as cursor."`
	Done       bool   `json:"done" jsonschema:"True once the final record was returned: nothing will follow."`
	// Status is the run's status when the page was read.
	Status    store.RunStatus `json:"status,omitempty"`
	OwnerGone int             `json:"owner_gone,omitempty" jsonschema:"The pid of a process that was executing the run and vanished; a live mcp-host adopts the run shortly."`
}

func (p *outputPage) summary() string {
	return fmt.Sprintf("%d journal records of run %s (done=%t); next_cursor %q continues.", len(p.Records), p.RunID, p.Done, p.NextCursor)
}

// session is a session as agents see it: its summary state flattened, and
// its memory file once it was compacted.
type session struct {
	ID           string    `json:"id"`
	Title        string    `json:"title,omitempty"`
	ParentID     string    `json:"parent_id,omitempty"`
	MessageCount int64     `json:"message_count"`
	Compactions  int64     `json:"compactions"`
	CompactedAt  time.Time `json:"compacted_at,omitzero"`
	MemoryFile   string    `json:"memory_file,omitempty" jsonschema:"The file holding the full text of the latest compaction summary."`
	Revision     int64     `json:"revision"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// sessionPage is a page of sessions.
type sessionPage struct {
	Sessions   []*session `json:"sessions"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// sessionRead is a session and a page of its messages.
type sessionRead struct {
	Session    *session         `json:"session"`
	Messages   []*store.Message `json:"messages"`
	NextCursor string           `json:"next_cursor,omitempty"`
}

// compaction is what a compaction did.
type compaction struct {
	Session    *session `json:"session"`
	ArchiveID  string   `json:"archive_id"`
	Compacted  int64    `json:"compacted" jsonschema:"How many messages the summary replaced."`
	MemoryFile string   `json:"memory_file,omitempty" jsonschema:"The file holding the full summary."`
	Truncated  bool     `json:"preview_truncated" jsonschema:"Whether the summary message is a shortened preview of the memory file."`
	Pruned     []string `json:"pruned_archives,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
}

// automation is an automation as agents see it: its state reduced to its
// history, and its trigger described.
type automation struct {
	ID      string                  `json:"id"`
	Key     string                  `json:"key"`
	Owner   string                  `json:"owner"`
	Target  string                  `json:"target"`
	Input   json.RawMessage         `json:"input,omitempty" jsonschema:"The input object of each run it launches."`
	Trigger store.AutomationTrigger `json:"trigger"`
	Enabled bool                    `json:"enabled"`
	Note    string                  `json:"note,omitempty"`
	Overlap string                  `json:"overlap"`
	Missed  string                  `json:"missed"`
	// Schedule is the trigger as people read it.
	Schedule  string    `json:"schedule,omitempty" jsonschema:"The trigger as people read it (\"cron 0 3 * * 1-5 (Europe/Paris)\")."`
	Source    string    `json:"source,omitempty"`
	Approval  string    `json:"approval,omitempty" jsonschema:"pending while it waits for a person's approval (mcp-host automations approve KEY); it fires nothing until then."`
	History   *history  `json:"history,omitempty"`
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// history is an automation's recent activity.
type history struct {
	LastStart  time.Time `json:"last_start,omitzero"`
	LastFinish time.Time `json:"last_finish,omitzero"`
	LastStatus string    `json:"last_status,omitempty"`
	LastRunID  string    `json:"last_run_id,omitempty"`
	NextDue    time.Time `json:"next_due,omitzero"`
	Fires      int64     `json:"fires"`
	Skipped    int64     `json:"skipped"`
	Missed     int64     `json:"missed"`
	LastError  string    `json:"last_error,omitempty"`
}

// nextDue is a's next due time computed now (not only once a scheduler
// recorded it), in its zone so the JSON carries the UTC offset.
func nextDue(a *store.Automation) time.Time {
	if t := automations.NextDue(a, time.Now()); !t.IsZero() {
		return t.In(automations.Location(a))
	}
	return time.Time{}
}

// automation is a's wire form, with its last run's own status while the
// record still says queued (automations.LastStatus).
func (s *Server) automation(ctx context.Context, a *store.Automation) *automation {
	w := newAutomation(a)
	if s.p.RunStore != nil {
		w.History.LastStatus = automations.LastStatus(ctx, s.p.RunStore, a)
	}
	return w
}

func newAutomation(a *store.Automation) *automation {
	st := a.State
	return &automation{
		ID: a.ID, Key: a.Key, Owner: a.Owner, Target: a.Target, Input: a.Input, Trigger: a.Trigger,
		Enabled: a.Enabled, Note: a.Note, Overlap: a.Overlap, Missed: a.Missed,
		Schedule: automations.Describe(a.Trigger), Source: a.Source, Approval: a.Approval,
		History: &history{
			LastStart: st.LastStart, LastFinish: st.LastFinish, LastStatus: st.LastStatus,
			LastRunID: st.LastRunID, NextDue: nextDue(a), Fires: st.Fires, Skipped: st.Skipped,
			Missed: st.Missed, LastError: st.LastError,
		},
		Revision: a.Revision, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}
}

// fire is what a manual fire did, with the run it queued.
type fire struct {
	automations.FireReport
	Run *runs.Run `json:"run,omitempty"`
}
