package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

// This file maps the domain packages onto the services the tools call.
// The mapping is all it does: every rule lives in the domain packages.

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// SessionsService serves the session tools with a sessions.Manager.
func SessionsService(m *sessions.Manager) SessionService { return sessionsAdapter{m} }

type sessionsAdapter struct{ m *sessions.Manager }

func (a sessionsAdapter) session(s *store.Session) *Session {
	if s == nil {
		return nil
	}
	out := &Session{
		ID: s.ID, Title: s.Title, ParentID: s.ParentID, MessageCount: s.MessageCount,
		Compactions: s.Summary.Compactions, CompactedAt: timePtr(s.Summary.CompactedAt),
		Revision: s.Revision, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
	}
	if s.Summary.Compactions > 0 {
		out.MemoryFile = a.m.MemoryPath(s.ID)
	}
	return out
}

func message(m *store.Message) *Message {
	return &Message{ID: m.ID, Seq: m.Seq, Role: string(m.Role), Parts: m.Parts, Metadata: m.Metadata, CreatedAt: m.CreatedAt}
}

func (a sessionsAdapter) Create(ctx context.Context, p CreateSessionParams) (*Session, bool, error) {
	s, created, err := a.m.Create(ctx, sessions.CreateParams{ID: p.ID, Title: p.Title})
	if err != nil {
		return nil, false, err
	}
	return a.session(s), created, nil
}

func (a sessionsAdapter) List(ctx context.Context, limit int, cursor string) (*SessionPage, error) {
	page, err := a.m.List(ctx, sessions.ListParams{Cursor: cursor, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := &SessionPage{Sessions: make([]*Session, 0, len(page.Sessions)), NextCursor: page.NextCursor}
	for _, s := range page.Sessions {
		out.Sessions = append(out.Sessions, a.session(s))
	}
	return out, nil
}

func (a sessionsAdapter) Read(ctx context.Context, id, cursor string, limit int) (*SessionRead, error) {
	page, err := a.m.Read(ctx, sessions.ReadParams{SessionID: id, Cursor: cursor, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := &SessionRead{Session: a.session(page.Session), Messages: make([]*Message, 0, len(page.Messages)), NextCursor: page.NextCursor}
	for _, m := range page.Messages {
		out.Messages = append(out.Messages, message(m))
	}
	return out, nil
}

func (a sessionsAdapter) Append(ctx context.Context, id string, msgs []NewMessage) (*Session, []*Message, error) {
	in := make([]sessions.MessageInput, 0, len(msgs))
	for _, m := range msgs {
		in = append(in, sessions.MessageInput{ID: m.ID, Role: store.Role(m.Role), Parts: m.Parts, Metadata: m.Metadata})
	}
	res, err := a.m.Append(ctx, id, in)
	if err != nil {
		return nil, nil, err
	}
	out := make([]*Message, 0, len(res.Messages))
	for _, m := range res.Messages {
		out = append(out, message(m))
	}
	return a.session(res.Session), out, nil
}

func (a sessionsAdapter) Compact(ctx context.Context, p CompactParams) (*Compaction, error) {
	cp := sessions.CompactParams{SessionID: p.SessionID, Summary: p.Summary}
	if p.KeepLast >= 0 {
		keep := p.KeepLast
		cp.KeepLast = &keep
	}
	res, err := a.m.Compact(ctx, cp)
	if err != nil {
		return nil, err
	}
	out := &Compaction{
		Session: a.session(res.Session), Compacted: res.Compacted, MemoryFile: res.MemoryPath,
		Truncated: res.Truncated, Pruned: res.Pruned, Warnings: res.Warnings,
	}
	if res.Archive != nil {
		out.ArchiveID = res.Archive.ID
	}
	return out, nil
}

func (a sessionsAdapter) Delete(ctx context.Context, id string) error { return a.m.Delete(ctx, id) }

// AutomationsService serves the automation tools with an
// automations.Service.
func AutomationsService(s *automations.Service) AutomationService { return automationsAdapter{s} }

type automationsAdapter struct{ s *automations.Service }

func automation(a *store.Automation) *Automation {
	st := a.State
	return &Automation{
		ID: a.ID, Key: a.Key, Owner: a.Owner, Target: a.Target, Input: a.Input,
		Trigger: AutomationWhen{
			Kind: a.Trigger.Kind, Cron: a.Trigger.Cron, TZ: a.Trigger.TZ, Every: a.Trigger.Every,
			Files: a.Trigger.Files, URL: a.Trigger.URL,
		},
		Enabled: a.Enabled, Note: a.Note, Overlap: a.Overlap, Missed: a.Missed,
		Schedule: automations.Describe(a.Trigger), Source: a.Source,
		History: &History{
			LastStart: timePtr(st.LastStart), LastFinish: timePtr(st.LastFinish), LastStatus: st.LastStatus,
			LastRunID: st.LastRunID, NextDue: timePtr(st.NextDue), Fires: st.Fires, Skipped: st.Skipped,
			Missed: st.Missed, LastError: st.LastError,
		},
		Revision: a.Revision, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}
}

func (a automationsAdapter) List(ctx context.Context, owner string) ([]*Automation, error) {
	list, err := a.s.List(ctx, automations.ListParams{Owner: owner})
	if err != nil {
		return nil, err
	}
	out := make([]*Automation, 0, len(list))
	for _, x := range list {
		out = append(out, automation(x))
	}
	return out, nil
}

func (a automationsAdapter) Create(ctx context.Context, p AutomationSpec) (*Automation, bool, error) {
	res, err := a.s.Create(ctx, automations.CreateParams{Owner: p.Owner, Spec: automations.Spec{
		Key: p.Key, Target: p.Target, Input: p.Input,
		Cron: p.When.Cron, TZ: p.When.TZ, Every: p.When.Every, Files: p.When.Files, URL: p.When.URL,
		Overlap: p.Overlap, Missed: p.Missed,
	}})
	if err != nil {
		return nil, false, err
	}
	return automation(res.Automation), res.Created, nil
}

func (a automationsAdapter) Update(ctx context.Context, u AutomationUpdate) (*Automation, error) {
	p := automations.UpdateParams{
		Ref: u.ID, Target: u.Target, Input: u.Input, Overlap: u.Overlap, Missed: u.Missed,
		Enabled: u.Enabled, Note: u.Note,
	}
	if w := u.When; w != nil {
		switch {
		case w.Cron != "":
			cron, tz := w.Cron, w.TZ
			p.Cron, p.TZ = &cron, &tz
		case len(w.Files) > 0:
			p.Files = w.Files
		case w.URL != "":
			url := w.URL
			p.URL = &url
		}
		if w.Every != "" {
			every := w.Every
			p.Every = &every
		}
	}
	res, err := a.s.Update(ctx, p)
	if err != nil {
		return nil, err
	}
	return automation(res), nil
}

func (a automationsAdapter) Delete(ctx context.Context, id string) error {
	_, err := a.s.Delete(ctx, automations.DeleteParams{Ref: id})
	return err
}

func (a automationsAdapter) Trigger(ctx context.Context, id string) (*Fire, error) {
	r, err := a.s.Trigger(ctx, automations.TriggerParams{Ref: id})
	if err != nil {
		return nil, err
	}
	return &Fire{
		AutomationID: r.AutomationID, Key: r.Key, Target: r.Target, Outcome: r.Outcome,
		Nominal: r.Nominal, RunID: r.RunID,
	}, nil
}

// RunsParams configure RunsService.
type RunsParams struct {
	Engine *runs.Engine
	// Store is the engine's store; subscriptions poll it for run records.
	Store store.RunStore
}

// RunsService serves the run tools with a runs.Engine.
func RunsService(p RunsParams) RunService { return runsAdapter{p} }

type runsAdapter struct{ p RunsParams }

func (a runsAdapter) Targets(ctx context.Context) (*TargetList, error) {
	wfs, problems := a.p.Engine.Targets().List()
	out := &TargetList{Targets: make([]Target, 0, len(wfs))}
	for name, wf := range wfs {
		t := Target{Name: name, Description: wf.Description, InputSchema: wf.InputSchema()}
		for _, tr := range wf.On {
			t.Triggers = append(t.Triggers, describeTrigger(tr))
		}
		out.Targets = append(out.Targets, t)
	}
	slices.SortFunc(out.Targets, func(x, y Target) int { return strings.Compare(x.Name, y.Name) })
	for _, p := range problems {
		out.Problems = append(out.Problems, p.Error())
	}
	return out, nil
}

// describeTrigger writes a workflow file's trigger as people read it.
func describeTrigger(t workflows.Trigger) string {
	every := ""
	if t.Every > 0 {
		every = automations.FormatEvery(t.Every)
	}
	switch t.Kind {
	case workflows.TriggerCron:
		if t.TZ != "" {
			return fmt.Sprintf("cron %s (%s)", t.Cron, t.TZ)
		}
		return "cron " + t.Cron
	case workflows.TriggerFiles:
		s := "files " + strings.Join(t.Files, " ")
		if every != "" {
			s += " every " + every
		}
		return s
	case workflows.TriggerHTTP:
		s := "http " + t.URL
		if every != "" {
			s += " every " + every
		}
		return s
	}
	return strings.TrimSpace(string(t.Kind) + " " + every)
}

func (a runsAdapter) Launch(ctx context.Context, p LaunchParams) (*Run, error) {
	r, err := a.p.Engine.Launch(ctx, runs.LaunchParams{Target: p.Target, Input: p.Input, Trigger: store.Trigger{Kind: "mcp"}})
	if err != nil {
		return nil, err
	}
	return runView(r), nil
}

func (a runsAdapter) Get(ctx context.Context, id string) (*Run, error) {
	r, err := a.p.Engine.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return runView(r), nil
}

func (a runsAdapter) List(ctx context.Context, p ListRunsParams) (*RunPage, error) {
	lp := runs.ListParams{Target: p.Target, Limit: p.Limit, Cursor: p.Cursor}
	if p.Status != "" {
		lp.Status = []store.RunStatus{store.RunStatus(p.Status)}
	}
	list, next, err := a.p.Engine.List(ctx, lp)
	if err != nil {
		return nil, err
	}
	out := &RunPage{Runs: make([]*Run, 0, len(list)), NextCursor: next}
	for _, r := range list {
		out.Runs = append(out.Runs, runView(r))
	}
	return out, nil
}

func (a runsAdapter) Answer(ctx context.Context, id, answer string) (*Run, error) {
	r, err := a.p.Engine.Answer(ctx, runs.AnswerParams{RunID: id, Answer: answer})
	if err != nil {
		return nil, err
	}
	return runView(r), nil
}

func (a runsAdapter) Cancel(ctx context.Context, id string) (*Run, error) {
	r, err := a.p.Engine.Cancel(ctx, id)
	if err != nil {
		return nil, err
	}
	return runView(r), nil
}

func (a runsAdapter) ReadOutput(ctx context.Context, p ReadOutputParams) (*OutputPage, error) {
	out, err := a.p.Engine.ReadOutput(ctx, p.RunID, runs.ReadParams{Cursor: p.Cursor, Limit: p.Limit, Wait: p.Wait})
	if err != nil {
		return nil, err
	}
	page := &OutputPage{
		RunID: out.RunID, Records: make([]json.RawMessage, 0, len(out.Records)), NextCursor: out.Cursor,
		Done: out.Done, Status: string(out.Status), OwnerGone: out.OwnerGone,
	}
	for _, rec := range out.Records {
		b, err := json.Marshal(rec)
		if err != nil {
			return nil, fmt.Errorf("encode journal record of run %s: %w", p.RunID, err)
		}
		page.Records = append(page.Records, b)
	}
	return page, nil
}

func (a runsAdapter) Version(ctx context.Context, id string) (RunVersion, error) {
	r, err := a.p.Store.GetRun(ctx, id)
	if err != nil {
		return RunVersion{}, err
	}
	v := RunVersion{Record: fmt.Sprintf("%d/%s", r.Revision, r.Status), Settled: r.Status.Settled()}
	n, err := a.p.Engine.OutputSize(ctx, id)
	if err != nil {
		return RunVersion{}, fmt.Errorf("size journal of run %s: %w", id, err)
	}
	v.Output = strconv.FormatInt(n, 10)
	return v, nil
}

// runView maps a run as the engine shows it.
func runView(r *runs.Run) *Run {
	out := &Run{
		ID: r.ID, Target: r.Target, Status: string(r.Status), Input: r.Input, Result: r.Result, Error: r.Error,
		SessionID: r.SessionID, OwnerPID: r.OwnerPID, CancelRequested: r.CancelRequested, WakeAt: timePtr(r.WakeAt),
		Revision: r.Revision, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		StartedAt: timePtr(r.StartedAt), FinishedAt: timePtr(r.FinishedAt),
		Trigger: &RunTrigger{Kind: r.Trigger.Kind, AutomationID: r.Trigger.AutomationID, Nominal: timePtr(r.Trigger.Nominal)},
	}
	if q := r.Question; q != nil {
		out.Question = &Question{ID: q.ID, Text: q.Text, Choices: q.Choices, Kind: q.Kind, Step: q.Step}
	}
	for _, s := range r.Steps {
		out.Steps = append(out.Steps, Step{
			ID: s.ID, Kind: s.Kind, Status: s.Status, Attempts: s.Attempts,
			StartedAt: timePtr(s.StartedAt), FinishedAt: timePtr(s.FinishedAt),
			ExitCode: s.ExitCode, StatusCode: s.StatusCode, Answer: s.Answer, Until: timePtr(s.Until), Error: s.Error,
		})
	}
	return out
}
