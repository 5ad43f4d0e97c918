package policy

import (
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
)

// FirePlan is what a backend writes for one fire.
type FirePlan struct {
	Result store.FireResult
	// Insert the new fire row (false with Update: replace the buffered
	// row; both false: write nothing).
	Insert, Update bool
	// QueueRun: insert Result.Run in the same transaction.
	QueueRun bool
	// State is the automation's new state (write it when Insert or Update).
	State store.AutomationState
}

// PlanFire decides what p does to a. last is the automation's latest run
// as stored now, with its Status and FinishedAt/UpdatedAt (nil when it has
// none, or it is gone), and existing the fire already recorded at
// p.Nominal (nil if none). A latest run that settled without the
// scheduler recording it is recorded in the new state (LastFinish,
// LastStatus) before a new run replaces it. Times are stored with
// millisecond precision, so p's times are truncated to the millisecond.
func PlanFire(a *store.Automation, last *store.Run, existing *store.AutomationFire, p store.FireParams) (FirePlan, error) {
	nominal := store.Millis(p.Nominal)
	actual := store.Millis(p.Actual)
	st := a.State
	plan := FirePlan{State: st}
	if !a.Enabled {
		return plan, fmt.Errorf("fire automation %s: %w%s", a.Key, store.ErrPaused, noteSuffix(a.Note))
	}
	// The latest run is in flight unless its row says it settled, the
	// scheduler recorded that it did, or it is gone.
	running := st.InFlight() && last != nil && !last.Status.Settled()
	if st.InFlight() && last != nil && last.Status.Settled() {
		// The latest run settled and the scheduler has not recorded it
		// yet: record it now, before a new run takes its place.
		st = settledState(st, last, actual)
		plan.State = st
	}
	if p.Release {
		return planRelease(plan, a, existing, p, nominal, actual, running)
	}
	if existing != nil || (!p.Manual && !nominal.After(st.Cursor)) {
		plan.Result = store.FireResult{Fire: existing, AlreadyFired: true}
		return plan, nil
	}
	if err := checkExpect(a, p.Expect); err != nil {
		return plan, err
	}
	f := &store.AutomationFire{AutomationID: a.ID, Nominal: nominal, Actual: actual, Lag: actual.Sub(nominal), Manual: p.Manual}
	switch {
	case !running || a.Overlap == store.OverlapAllow:
		if p.Run == nil {
			return plan, fmt.Errorf("fire automation %s: no run given", a.Key)
		}
		f.Outcome, f.RunID = store.FireQueued, p.Run.ID
		startRun(&plan.State, p.Run, actual)
		plan.QueueRun = true
		plan.Result.Run = p.Run
	case a.Overlap == store.OverlapBufferOne && plan.State.Buffered.IsZero():
		f.Outcome = store.FireBuffered
		plan.State.Buffered = nominal
	default:
		f.Outcome = store.FireSkipped
		plan.State.Skipped++
	}
	if !p.Manual {
		plan.State.Cursor = nominal
		plan.State.Missed += max(p.Missed, 0)
	}
	if !p.NextDue.IsZero() {
		plan.State.NextDue = store.Millis(p.NextDue)
	}
	if p.Observation != "" {
		plan.State.Observation = p.Observation
		plan.State.ObservedAt = actual
		plan.State.Pending = nil
	}
	plan.State.LastError = ""
	plan.Insert = true
	plan.Result.Fire = f
	return plan, nil
}

// planRelease hands over the fire buffer_one held at nominal, if it is
// still buffered and the previous run is no longer running.
func planRelease(plan FirePlan, a *store.Automation, existing *store.AutomationFire, p store.FireParams, nominal, actual time.Time, running bool) (FirePlan, error) {
	if existing == nil || existing.Outcome != store.FireBuffered || !plan.State.Buffered.Equal(nominal) || running {
		plan.Result = store.FireResult{Fire: existing, AlreadyFired: true}
		return plan, nil
	}
	if p.Run == nil {
		return plan, fmt.Errorf("release fire of automation %s: no run given", a.Key)
	}
	f := *existing
	f.Outcome, f.RunID = store.FireQueued, p.Run.ID
	// The history records when the fire was released, and its lag from
	// the slot, not when it was buffered.
	f.Actual = store.Millis(actual)
	f.Lag = f.Actual.Sub(f.Nominal)
	plan.State.Buffered = time.Time{}
	startRun(&plan.State, p.Run, actual)
	plan.Update, plan.QueueRun = true, true
	plan.Result = store.FireResult{Fire: &f, Run: p.Run}
	return plan, nil
}

// checkExpect refuses a fire prepared ahead from an automation that
// changed since (see store.FireExpect).
func checkExpect(a *store.Automation, e *store.FireExpect) error {
	switch {
	case e == nil:
		return nil
	case e.Revision != a.Revision:
		return fmt.Errorf("fire prepared for automation %s: %w", a.Key, &store.StaleError{Kind: "automation", ID: a.ID, Expected: e.Revision, Actual: a.Revision})
	case !store.Millis(e.Cursor).Equal(a.State.Cursor):
		return fmt.Errorf("fire prepared for automation %s: its cursor moved since: %w", a.Key, store.ErrStale)
	case !a.State.Buffered.IsZero():
		return fmt.Errorf("fire prepared for automation %s: a buffered fire waits to be released first: %w", a.Key, store.ErrStale)
	}
	return nil
}

// settledState records that last, the latest run, settled, as of a fire
// at actual. The finish is kept after the run's start and before actual,
// so the state reads as not in flight until the new run starts and in
// flight after.
func settledState(st store.AutomationState, last *store.Run, actual time.Time) store.AutomationState {
	at := last.FinishedAt
	if at.IsZero() {
		at = last.UpdatedAt
	}
	at = store.Millis(at)
	if !at.Before(actual) {
		at = actual.Add(-time.Millisecond)
	}
	if at.Before(st.LastStart) {
		at = st.LastStart
	}
	st.LastFinish = at
	st.LastStatus = string(last.Status)
	CountOutcome(&st, last.Status)
	return st
}

// startRun records that r was queued at at. The start is kept after the
// last finish, so the run reads as in flight even when the wall clock
// went back since that finish.
func startRun(st *store.AutomationState, r *store.Run, at time.Time) {
	if !at.After(st.LastFinish) {
		at = st.LastFinish.Add(time.Millisecond)
	}
	st.LastStart = at
	st.LastRunID = r.ID
	st.LastStatus = string(store.RunQueued)
	st.Fires++
}

func noteSuffix(note string) string {
	if note == "" {
		return ""
	}
	return " (" + note + ")"
}
