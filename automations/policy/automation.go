package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/cairnhq/cairn/automations/schedule"
	"github.com/cairnhq/cairn/store"
)

// ApplyRecord applies p to a's state, returning the new state or an error
// wrapping store.ErrStale when p.ExpectObservation does not match.
func ApplyRecord(a *store.Automation, p store.RecordParams) (store.AutomationState, error) {
	st := a.State
	if p.ExpectObservation != nil && *p.ExpectObservation != st.Observation {
		return st, fmt.Errorf("record observation of automation %s: it changed since it was read: %w", a.ID, store.ErrStale)
	}
	if c := store.Millis(p.Cursor); c.After(st.Cursor) {
		st.Cursor = c
		st.Missed += max(p.Missed, 0)
	}
	if !p.NextDue.IsZero() {
		st.NextDue = store.Millis(p.NextDue)
	}
	if f := p.Finished; f != nil && f.RunID == st.LastRunID && st.InFlight() {
		at := store.Millis(f.At)
		if at.Before(st.LastStart) {
			at = st.LastStart
		}
		st.LastFinish = at
		st.LastStatus = string(f.Status)
		CountOutcome(&st, f.Status)
	}
	if p.FireFailed {
		st.Failures++
	}
	if p.Baseline != "" {
		st.Observation = p.Baseline
	}
	if !p.ObservedAt.IsZero() {
		st.ObservedAt = store.Millis(p.ObservedAt)
	}
	if p.ClearPending {
		st.Pending = nil
	}
	if p.Pending != nil {
		pl := *p.Pending
		pl.Nominal = store.Millis(pl.Nominal)
		pl.Since = store.Millis(pl.Since)
		st.Pending = &pl
	}
	switch p.Error {
	case "":
	case "-":
		st.LastError = ""
	default:
		st.LastError = p.Error
	}
	return st, nil
}

// ApplyUpdate copies the spec of next onto cur, as UpdateAutomation does:
// it returns the updated record (revision bumped, state adjusted). now is
// the update's time (zero: the current time).
func ApplyUpdate(cur, next *store.Automation, now time.Time) *store.Automation {
	out := *cur
	out.Target = next.Target
	out.Input = append(json.RawMessage(nil), next.Input...)
	if len(out.Input) == 0 {
		out.Input = json.RawMessage("{}")
	}
	out.Trigger = next.Trigger
	out.Trigger.Files = slices.Clone(next.Trigger.Files)
	out.Enabled = next.Enabled
	out.Note = next.Note
	out.Overlap = next.Overlap
	out.Missed = next.Missed
	out.Source = next.Source
	out.Approval = next.Approval
	out.Revision = cur.Revision + 1
	now = store.Millis(store.At(now))
	out.UpdatedAt = now
	st := cur.State
	st.Pending = st.Pending.Clone()
	if !cur.Trigger.Equal(next.Trigger) && (isMonitor(cur.Trigger) || isMonitor(next.Trigger)) {
		// A monitor's observation means nothing for another trigger: the
		// next poll is a new baseline.
		st.Observation, st.Pending = "", nil
	}
	if next.Enabled && !cur.Enabled && now.After(st.Cursor) {
		// Slots that passed while paused are not caught up.
		st.Cursor = now.Truncate(time.Second)
	}
	if next.Enabled && !cur.Enabled {
		// A resume gives the automation a fresh count of failures.
		st.Failures = 0
	}
	out.State = st
	return &out
}

// isMonitor reports whether t polls something (files or a URL).
func isMonitor(t store.AutomationTrigger) bool {
	return t.Kind == store.TriggerFiles || t.Kind == store.TriggerHTTP
}

// PrepareNew fills a new automation's defaults, as CreateAutomation does:
// CreatedAt (zero: the current time), UpdatedAt (zero: CreatedAt), an
// empty input object, the default overlap and missed-run policies, and
// revision 1.
func PrepareNew(a *store.Automation) {
	a.CreatedAt = store.Millis(store.At(a.CreatedAt))
	if a.UpdatedAt.IsZero() {
		a.UpdatedAt = a.CreatedAt
	}
	a.UpdatedAt = store.Millis(a.UpdatedAt)
	if len(a.Input) == 0 {
		a.Input = json.RawMessage("{}")
	}
	if a.Overlap == "" {
		a.Overlap = store.OverlapSkip
	}
	if a.Missed == "" {
		a.Missed = string(schedule.MissedSkip)
	}
	a.Revision = 1
}
