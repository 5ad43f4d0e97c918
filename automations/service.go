package automations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

// Service is the automations API the CLI and the MCP adapter share: list,
// create (idempotent on owner and key), update, pause, resume, delete,
// trigger and roll. It is safe for concurrent use.
type Service struct {
	Store    store.Store
	LocksDir string
	Targets  Targets
	Clock    clock.Clock // nil: the real clock
	// Notify, when set, is called after every change, so that a scheduler
	// in this process recalculates at once (Scheduler.Notify).
	Notify func()
}

func (s *Service) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock.Now()
}

func (s *Service) notify() {
	if s.Notify != nil {
		s.Notify()
	}
}

var (
	// ErrConflict is wrapped by *ConflictError.
	ErrConflict = errors.New("automation exists with a different spec")
	// ErrConfigOwned is wrapped when a change is refused because the
	// automation comes from a workflow file.
	ErrConfigOwned = errors.New("automation comes from a workflow file")
	// ErrAmbiguous is wrapped when a key names automations of several owners.
	ErrAmbiguous = errors.New("ambiguous automation key")
)

// ConflictError refuses a create whose owner and key exist with another
// spec. It wraps ErrConflict and store.ErrExists.
type ConflictError struct {
	Existing    *store.Automation
	Differences []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("automation %q already exists (%s) with a different spec: %s; update it, delete it first, or choose another key",
		e.Existing.Key, e.Existing.ID, strings.Join(e.Differences, "; "))
}

func (e *ConflictError) Unwrap() []error { return []error{ErrConflict, store.ErrExists} }

// EditLockedError says another process is changing the automation now.
type EditLockedError struct {
	Key  string
	Held *locks.HeldError
}

func (e *EditLockedError) Error() string {
	return fmt.Sprintf("automation %s is being changed by %s; retry", e.Key, e.Held.Holder)
}

func (e *EditLockedError) Unwrap() error { return e.Held }

// CreateParams create an automation.
type CreateParams struct {
	// Owner is who creates it: "cli", "mcp:<client>" or a session id.
	Owner string
	Spec  Spec
}

// CreateResult is a created automation, or the existing one with the same
// owner, key and spec (Created false).
type CreateResult struct {
	Automation *store.Automation `json:"automation"`
	Created    bool              `json:"created"`
}

// Create stores a new automation after checking its spec and that its
// target accepts its input. Nothing is stored when anything is wrong.
// When the owner already has the key with the same spec it returns that
// one; with another spec it fails with a *ConflictError.
func (s *Service) Create(ctx context.Context, p CreateParams) (CreateResult, error) {
	if p.Owner == "" {
		return CreateResult{}, specErrf("owner", "must not be empty")
	}
	if p.Owner == store.OwnerConfig {
		return CreateResult{}, fmt.Errorf("create automation %s: %w: owner %q is kept for automations from workflow files", p.Spec.Key, ErrConfigOwned, store.OwnerConfig)
	}
	a, err := s.build(ctx, p.Owner, p.Spec)
	if err != nil {
		return CreateResult{}, fmt.Errorf("create automation %s: %w", short(p.Spec.Key), err)
	}
	return s.insert(ctx, a)
}

// build checks a spec and makes the record to store.
func (s *Service) build(ctx context.Context, owner string, sp Spec) (*store.Automation, error) {
	n, err := normalize(sp)
	if err != nil {
		return nil, err
	}
	if _, err := s.Targets.Prepare(ctx, sp.Target, n.input); err != nil {
		return nil, specErr("target", err)
	}
	now := s.now()
	a := &store.Automation{
		ID: ids.New("aut"), Key: sp.Key, Owner: owner, Target: sp.Target, Input: n.input,
		Trigger: n.trigger, Enabled: true, Overlap: n.overlap, Missed: n.missed,
		CreatedAt: now, UpdatedAt: now,
	}
	if sp.Enabled != nil && !*sp.Enabled {
		a.Enabled, a.Note = false, sp.Note
	}
	return a, nil
}

func (s *Service) insert(ctx context.Context, a *store.Automation) (CreateResult, error) {
	err := s.Store.CreateAutomation(ctx, a)
	var ex *store.AutomationExistsError
	switch {
	case errors.As(err, &ex):
		n := normalized{trigger: a.Trigger, input: a.Input, overlap: a.Overlap, missed: a.Missed}
		if d := diffSpec(ex.Existing, n, a.Target); len(d) > 0 {
			return CreateResult{}, &ConflictError{Existing: ex.Existing, Differences: d}
		}
		return CreateResult{Automation: ex.Existing}, nil
	case err != nil:
		return CreateResult{}, fmt.Errorf("create automation %s: %w", a.Key, err)
	}
	s.notify()
	return CreateResult{Automation: a, Created: true}, nil
}

// ListParams select automations.
type ListParams struct {
	Owner string // "": every owner
}

// List returns automations, by owner then key.
func (s *Service) List(ctx context.Context, p ListParams) ([]*store.Automation, error) {
	return s.Store.ListAutomations(ctx, store.AutomationFilter{Owner: p.Owner})
}

// Detail is an automation with its recent fires.
type Detail struct {
	*store.Automation
	Schedule string                  `json:"schedule"`
	Fires    []*store.AutomationFire `json:"fires"`
}

// Get returns the automation ref names (an id, or a key; see Resolve) with
// its last fires.
func (s *Service) Get(ctx context.Context, ref string) (*Detail, error) {
	a, err := s.Resolve(ctx, ref, "")
	if err != nil {
		return nil, err
	}
	fires, err := s.Store.ListFires(ctx, a.ID, store.FireHistory)
	if err != nil {
		return nil, err
	}
	return &Detail{Automation: a, Schedule: Describe(a.Trigger), Fires: fires}, nil
}

// Resolve finds an automation by id, else by key. owner, when set, limits
// the key lookup to that owner; without one, a key that several owners use
// is ambiguous (ErrAmbiguous). A miss wraps store.ErrNotFound.
func (s *Service) Resolve(ctx context.Context, ref, owner string) (*store.Automation, error) {
	if err := ids.Validate("automation id or key", ref); err != nil {
		return nil, err
	}
	if strings.HasPrefix(ref, "aut_") {
		a, err := s.Store.GetAutomation(ctx, ref)
		if err == nil && (owner == "" || a.Owner == owner) {
			return a, nil
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	list, err := s.Store.ListAutomations(ctx, store.AutomationFilter{Owner: owner, Key: ref})
	if err != nil {
		return nil, err
	}
	switch len(list) {
	case 0:
		return nil, &store.NotFoundError{Kind: "automation", ID: ref}
	case 1:
		return list[0], nil
	}
	var owners []string
	for _, a := range list {
		owners = append(owners, fmt.Sprintf("%s (owner %s)", a.ID, a.Owner))
	}
	return nil, fmt.Errorf("automation key %q: %w: it names %s; use the id", ref, ErrAmbiguous, strings.Join(owners, ", "))
}

// UpdateParams change an automation. Nil fields are left alone. Any
// trigger field replaces the trigger: Cron (with TZ) makes it a cron
// trigger, Files or URL a monitor, Every alone changes the interval or the
// poll period (or turns a cron trigger into an interval).
type UpdateParams struct {
	Ref   string // id or key
	Owner string // when set, the automation must belong to it
	// Revision, when not 0, must be the automation's current revision.
	Revision int64

	Target  *string
	Input   json.RawMessage
	Cron    *string
	TZ      *string
	Every   *string
	Files   []string
	URL     *string
	Overlap *string
	Missed  *string
	Enabled *bool
	Note    *string
}

func (p UpdateParams) changesSpec() bool {
	return p.Target != nil || p.Input != nil || p.Cron != nil || p.TZ != nil || p.Every != nil || p.Files != nil || p.URL != nil || p.Overlap != nil || p.Missed != nil
}

// Update changes an automation under its edit lock (locks/edit-<id>; when
// another process holds it the error is an *EditLockedError) and checks
// the revision. Automations from workflow files can only be paused and
// resumed here.
func (s *Service) Update(ctx context.Context, p UpdateParams) (*store.Automation, error) {
	a, err := s.Resolve(ctx, p.Ref, p.Owner)
	if err != nil {
		return nil, fmt.Errorf("update automation: %w", err)
	}
	if a.Owner == store.OwnerConfig && p.changesSpec() {
		return nil, fmt.Errorf("update automation %s: %w (%s); edit the file instead (pause and resume work here)", a.Key, ErrConfigOwned, a.Source)
	}
	var out *store.Automation
	err = s.withEditLock(a, func() error {
		// Read again under the lock: the edit applies to the current record.
		cur, err := s.Store.GetAutomation(ctx, a.ID)
		if err != nil {
			return err
		}
		if p.Revision != 0 && cur.Revision != p.Revision {
			return &store.StaleError{Kind: "automation", ID: cur.ID, Expected: p.Revision, Actual: cur.Revision}
		}
		next, err := s.apply(ctx, cur, p)
		if err != nil {
			return err
		}
		next.UpdatedAt = s.now()
		if err := s.Store.UpdateAutomation(ctx, next, cur.Revision); err != nil {
			return err
		}
		out = next
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("update automation %s: %w", a.Key, err)
	}
	s.notify()
	return out, nil
}

// apply returns cur with p's changes, checked as a create checks them.
func (s *Service) apply(ctx context.Context, cur *store.Automation, p UpdateParams) (*store.Automation, error) {
	next := store.CloneAutomation(cur)
	if p.Enabled != nil {
		next.Enabled = *p.Enabled
		if next.Enabled {
			next.Note = ""
		}
	}
	if p.Note != nil {
		next.Note = *p.Note
	}
	if !p.changesSpec() {
		return next, nil
	}
	sp := Spec{Key: cur.Key, Target: cur.Target, Input: cur.Input, Overlap: cur.Overlap, Missed: cur.Missed}
	if p.Target != nil {
		sp.Target = *p.Target
	}
	if p.Input != nil {
		sp.Input = p.Input
	}
	if p.Overlap != nil {
		sp.Overlap = *p.Overlap
	}
	if p.Missed != nil {
		sp.Missed = *p.Missed
	}
	setTriggerSpec(&sp, cur.Trigger, p)
	n, err := normalize(sp)
	if err != nil {
		return nil, err
	}
	if _, err := s.Targets.Prepare(ctx, sp.Target, n.input); err != nil {
		return nil, specErr("target", err)
	}
	next.Target, next.Input, next.Trigger, next.Overlap, next.Missed = sp.Target, n.input, n.trigger, n.overlap, n.missed
	return next, nil
}

// setTriggerSpec fills sp's trigger fields from the current trigger and
// the changes.
func setTriggerSpec(sp *Spec, cur store.AutomationTrigger, p UpdateParams) {
	sp.Cron, sp.TZ, sp.Every, sp.Files, sp.URL = cur.Cron, cur.TZ, cur.Every, cur.Files, cur.URL
	if cur.Kind == store.TriggerCron {
		sp.Every = ""
	}
	switch {
	case p.Cron != nil:
		sp.Cron, sp.Every, sp.Files, sp.URL = *p.Cron, "", nil, ""
		if cur.Kind != store.TriggerCron {
			sp.TZ = ""
		}
	case p.Files != nil:
		sp.Cron, sp.TZ, sp.Files, sp.URL = "", "", p.Files, ""
		if cur.Kind != store.TriggerFiles {
			sp.Every = ""
		}
	case p.URL != nil:
		sp.Cron, sp.TZ, sp.Files, sp.URL = "", "", nil, *p.URL
		if cur.Kind != store.TriggerHTTP {
			sp.Every = ""
		}
	case p.Every != nil && cur.Kind == store.TriggerCron:
		sp.Cron, sp.TZ = "", ""
	}
	if p.TZ != nil {
		sp.TZ = *p.TZ
	}
	if p.Every != nil {
		sp.Every = *p.Every
	}
}

// Pause disables an automation with a note saying why.
func (s *Service) Pause(ctx context.Context, ref, note string) (*store.Automation, error) {
	off := false
	return s.Update(ctx, UpdateParams{Ref: ref, Enabled: &off, Note: &note})
}

// Resume enables an automation; slots that passed while it was paused are
// not caught up.
func (s *Service) Resume(ctx context.Context, ref string) (*store.Automation, error) {
	on := true
	return s.Update(ctx, UpdateParams{Ref: ref, Enabled: &on})
}

// DeleteParams delete an automation.
type DeleteParams struct {
	Ref      string
	Owner    string // when set, the automation must belong to it
	Revision int64  // when not 0, must be current
}

// Delete removes an automation and its history under its edit lock.
// Automations from workflow files are removed by removing their trigger.
func (s *Service) Delete(ctx context.Context, p DeleteParams) (*store.Automation, error) {
	a, err := s.Resolve(ctx, p.Ref, p.Owner)
	if err != nil {
		return nil, fmt.Errorf("delete automation: %w", err)
	}
	if a.Owner == store.OwnerConfig {
		return nil, fmt.Errorf("delete automation %s: %w (%s); remove the trigger from the file, or pause it", a.Key, ErrConfigOwned, a.Source)
	}
	err = s.withEditLock(a, func() error {
		rev := p.Revision
		if rev == 0 {
			cur, err := s.Store.GetAutomation(ctx, a.ID)
			if err != nil {
				return err
			}
			rev = cur.Revision
		}
		return s.Store.DeleteAutomation(ctx, a.ID, rev)
	})
	if err != nil {
		return nil, fmt.Errorf("delete automation %s: %w", a.Key, err)
	}
	s.notify()
	return a, nil
}

func (s *Service) withEditLock(a *store.Automation, fn func() error) error {
	l, err := locks.TryLock(s.LocksDir, "edit-"+a.ID)
	var held *locks.HeldError
	if errors.As(err, &held) {
		return &EditLockedError{Key: a.Key, Held: held}
	}
	if err != nil {
		return err
	}
	defer l.Unlock()
	return fn()
}

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
	Owner string          // when set, the automation must belong to it
	Input json.RawMessage // replaces the automation's input for this fire
}

// Trigger fires an automation now (nominal time = now), as a manual fire:
// the overlap policy applies, the schedule's cursor does not move. A paused
// automation is refused (store.ErrPaused).
func (s *Service) Trigger(ctx context.Context, p TriggerParams) (*FireReport, error) {
	a, err := s.Resolve(ctx, p.Ref, p.Owner)
	if err != nil {
		return nil, fmt.Errorf("trigger automation: %w", err)
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
		run.Trigger = store.Trigger{Kind: "automation", AutomationID: a.ID, Nominal: nominal}
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

// PausedError refuses to fire a paused automation; it wraps
// store.ErrPaused.
type PausedError struct{ Key, Note string }

func (e *PausedError) Error() string {
	note := ""
	if e.Note != "" {
		note = " (" + e.Note + ")"
	}
	return fmt.Sprintf("automation %s is paused%s; resume it first", e.Key, note)
}

func (e *PausedError) Unwrap() error { return store.ErrPaused }
