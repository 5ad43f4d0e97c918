package automations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

// UpdateParams change an automation. Nil fields are left alone. Any
// trigger field replaces the trigger: Cron (with TZ) makes it a cron
// trigger, Files or URL a monitor, Every alone changes the interval or the
// poll period (or turns a cron trigger into an interval).
type UpdateParams struct {
	Ref   string // id or key
	Owner string // when set, the automation must belong to it
	// By is who asks ("": a person); an agent changes only what the
	// policy lets it (see access.Policy.CanEdit).
	By access.Principal
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
	if err := s.Policy.CanEdit(p.By, a.Owner); err != nil {
		return nil, fmt.Errorf("update automation %s: %w", a.Key, err)
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
		if err := s.admitChange(p.By, cur, next); err != nil {
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
	n, err := s.check(ctx, sp)
	if err != nil {
		return nil, err
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
	Owner    string           // when set, the automation must belong to it
	By       access.Principal // who asks ("": a person)
	Revision int64            // when not 0, must be current
}

// Delete removes an automation and its history under its edit lock.
// Automations from workflow files are removed by removing their trigger.
func (s *Service) Delete(ctx context.Context, p DeleteParams) (*store.Automation, error) {
	a, err := s.Resolve(ctx, p.Ref, p.Owner)
	if err != nil {
		return nil, fmt.Errorf("delete automation: %w", err)
	}
	if err := s.Policy.CanEdit(p.By, a.Owner); err != nil {
		return nil, fmt.Errorf("delete automation %s: %w", a.Key, err)
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
