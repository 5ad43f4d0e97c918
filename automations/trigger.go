package automations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

// FireReport is what a manual fire did, as `roll` prints it.
type FireReport struct {
	AutomationID string    `json:"automation_id"`
	Key          string    `json:"key"`
	Target       string    `json:"target"`
	Outcome      string    `json:"outcome"` // queued, skipped, buffered, already_fired
	Nominal      time.Time `json:"nominal"`
	Actual       time.Time `json:"actual"`
	LagMS        int64     `json:"lag_ms"`
	RunID        string    `json:"run_id,omitempty"`
}

// OutcomeAlreadyFired reports a fire whose slot was fired before.
const OutcomeAlreadyFired = "already_fired"

// TriggerParams fire an automation now.
type TriggerParams struct {
	Ref   string
	Owner string           // when set, the automation must belong to it
	By    access.Principal // who asks ("": a person)
	Input json.RawMessage  // replaces the automation's input for this fire
}

// Trigger fires an automation now (nominal time = now), as a manual fire:
// the overlap policy applies, the schedule's cursor does not move. A paused
// automation is refused (store.ErrPaused).
func (s *Service) Trigger(ctx context.Context, p TriggerParams) (*FireReport, error) {
	a, err := s.Resolve(ctx, p.Ref, p.Owner)
	if err != nil {
		return nil, fmt.Errorf("trigger automation: %w", err)
	}
	if err := s.Policy.CanEdit(p.By, a.Owner); err != nil {
		return nil, fmt.Errorf("trigger automation %s: %w", a.Key, err)
	}
	// An agent's trigger is a launch by it: agents.launch applies now, as
	// it did when the automation was made (it may have changed since).
	if err := s.Policy.CanLaunch(p.By, a.Target); err != nil {
		return nil, fmt.Errorf("trigger automation %s: %w", a.Key, err)
	}
	rep, err := s.fireNow(ctx, a, p.Input)
	var pe *PausedError
	if err != nil && !errors.As(err, &pe) {
		return nil, fmt.Errorf("trigger automation %s: %w", a.Key, err)
	}
	return rep, err
}

// Roll fires the automation named ref now under locks/schedule:<key>: when
// another process holds that lock the error is a *locks.HeldError and
// nothing fires.
func (s *Service) Roll(ctx context.Context, p TriggerParams) (*FireReport, error) {
	a, err := s.Resolve(ctx, p.Ref, p.Owner)
	if err != nil {
		return nil, err
	}
	l, err := locks.TryLock(s.LocksDir, "schedule:"+a.Key)
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	rep, err := s.fireNow(ctx, a, p.Input)
	var pe *PausedError
	if err != nil && !errors.As(err, &pe) {
		return nil, fmt.Errorf("roll %s: %w", a.Key, err)
	}
	return rep, err
}

func (s *Service) fireNow(ctx context.Context, a *store.Automation, input json.RawMessage) (*FireReport, error) {
	if a.Approval == store.ApprovalPending {
		return nil, fmt.Errorf("automation %s waits for approval: mcp-host automations approve %s", a.Key, a.Key)
	}
	if !a.Enabled {
		return nil, &PausedError{Key: a.Key, Note: a.Note}
	}
	in := a.Input
	if input != nil {
		var err error
		if in, err = normalizeInput(input); err != nil {
			return nil, err
		}
	}
	run, err := s.Targets.Prepare(ctx, a.Target, in)
	if err != nil {
		return nil, err
	}
	// A manual fire is not a slot: its nominal time is when it was asked
	// for, moved on by a millisecond while another fire has that time.
	now := s.now().UTC().Truncate(time.Millisecond)
	var res store.FireResult
	for nominal := now; nominal.Before(now.Add(100 * time.Millisecond)); nominal = nominal.Add(time.Millisecond) {
		run.Trigger = store.Trigger{Kind: "automation", AutomationID: a.ID, Nominal: nominal, Principal: ownerPrincipal(a.Owner)}
		res, err = s.Store.Fire(ctx, store.FireParams{AutomationID: a.ID, Nominal: nominal, Actual: now, Run: run, Manual: true})
		if err != nil {
			return nil, err
		}
		if !res.AlreadyFired {
			break
		}
	}
	s.notify()
	return report(a, res), nil
}

func report(a *store.Automation, res store.FireResult) *FireReport {
	rep := &FireReport{AutomationID: a.ID, Key: a.Key, Target: a.Target}
	if f := res.Fire; f != nil {
		rep.Outcome, rep.Nominal, rep.Actual, rep.LagMS, rep.RunID = f.Outcome, f.Nominal, f.Actual, f.Lag.Milliseconds(), f.RunID
	}
	if res.AlreadyFired {
		rep.Outcome = OutcomeAlreadyFired
	}
	return rep
}
