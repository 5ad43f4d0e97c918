package automations

import (
	"context"
	"time"

	"github.com/cairnhq/cairn/store"
)

// Summary is one automation as `mcp-host status` and `mcp-host list` show
// it: what it runs, when, and when it last and next does.
type Summary struct {
	ID         string    `json:"id"`
	Key        string    `json:"key"`
	Owner      string    `json:"owner"`
	Target     string    `json:"target"`
	Schedule   string    `json:"schedule"` // Describe(trigger)
	Zone       string    `json:"zone"`     // the zone its times are in (Location)
	Enabled    bool      `json:"enabled"`
	Note       string    `json:"note,omitempty"`
	Approval   string    `json:"approval,omitempty"` // store.ApprovalPending while it waits
	LastStart  time.Time `json:"last_start,omitzero"`
	LastFinish time.Time `json:"last_finish,omitzero"`
	LastStatus string    `json:"last_status,omitempty"`
	NextDue    time.Time `json:"next_due,omitzero"`
	Fires      int64     `json:"fires"`
	Skipped    int64     `json:"skipped"`
	Missed     int64     `json:"missed"`
	LastError  string    `json:"last_error,omitempty"`
	Failures   int64     `json:"failures,omitempty"` // failed fires in a row
}

// Summaries lists every automation in s as a Summary at now, by owner
// then key. It only reads.
func Summaries(ctx context.Context, s store.AutomationStore, now time.Time) ([]Summary, error) {
	list, err := s.ListAutomations(ctx, store.AutomationFilter{})
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(list))
	for _, a := range list {
		sum := Summarize(a, now)
		sum.LastStatus = LastStatus(ctx, s, a)
		out = append(out, sum)
	}
	return out, nil
}

// runGetter reads one run: the stores behind a listing do.
type runGetter interface {
	GetRun(ctx context.Context, id string) (*store.Run, error)
}

// LastStatus is the status of a's last run: the recorded one, except
// that a recorded queued (what a fire writes) is read from the run
// itself: the scheduler records a run's outcome when it next looks, so
// until then (for good, when the process that fired it stopped) the
// record says queued of a run that runs, waits or has ended. One run read
// per such automation; a run that cannot be read (or s without runs)
// leaves the recorded status.
func LastStatus(ctx context.Context, s any, a *store.Automation) string {
	if a.State.LastStatus != string(store.RunQueued) || a.State.LastRunID == "" {
		return a.State.LastStatus
	}
	if g, ok := s.(runGetter); ok {
		if r, err := g.GetRun(ctx, a.State.LastRunID); err == nil {
			return string(r.Status)
		}
	}
	return a.State.LastStatus
}

// Summarize makes a's Summary at now: its next due time computed at once
// (NextDue), every time in its zone (Location), so the JSON carries the
// offset.
func Summarize(a *store.Automation, now time.Time) Summary {
	st := a.State
	loc := Location(a)
	in := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return t.In(loc)
	}
	return Summary{
		ID: a.ID, Key: a.Key, Owner: a.Owner, Target: a.Target, Schedule: Describe(a.Trigger), Zone: loc.String(),
		Enabled: a.Enabled, Note: a.Note, Approval: a.Approval,
		LastStart: in(st.LastStart), LastFinish: in(st.LastFinish), LastStatus: st.LastStatus, NextDue: in(NextDue(a, now)),
		Fires: st.Fires, Skipped: st.Skipped, Missed: st.Missed, LastError: st.LastError, Failures: st.Failures,
	}
}

// CountEnabled counts the enabled automations in s: a background worker
// stays up while there is one, since it may be the only scheduler.
func CountEnabled(ctx context.Context, s store.AutomationStore) (int, error) {
	list, err := s.ListAutomations(ctx, store.AutomationFilter{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, a := range list {
		if a.Enabled {
			n++
		}
	}
	return n, nil
}
