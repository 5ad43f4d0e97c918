package automations

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/internal/text"
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
	// Policy limits what agents do (nil: the defaults; see package
	// access). People are never limited.
	Policy *access.Policy
}

func (s *Service) now() time.Time { return clock.OrReal(s.Clock).Now() }

func (s *Service) notify() {
	if s.Notify != nil {
		s.Notify()
	}
}

// CreateParams create an automation.
type CreateParams struct {
	// Owner is who creates it: "human", "agent:<client>" or a session
	// id; "": By.
	Owner string
	// By is who asks ("": a person). An agent owns what it creates: Owner
	// must be empty or By.
	By   access.Principal
	Spec Spec
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
		p.Owner = string(p.By)
	}
	if p.By.IsAgent() && p.Owner != string(p.By) {
		return CreateResult{}, fmt.Errorf("create automation %s: an agent creates automations of its own only (owner %s), not of %q", text.Shorten(p.Spec.Key, maxShown), p.By, p.Owner)
	}
	if p.Owner == "" {
		return CreateResult{}, specErrf("owner", "must not be empty")
	}
	if p.Owner == store.OwnerConfig {
		return CreateResult{}, fmt.Errorf("create automation %s: %w: owner %q is kept for automations from workflow files", p.Spec.Key, ErrConfigOwned, store.OwnerConfig)
	}
	a, err := s.build(ctx, p.Owner, p.Spec)
	if err != nil {
		return CreateResult{}, fmt.Errorf("create automation %s: %w", text.Shorten(p.Spec.Key, maxShown), err)
	}
	if err := s.admit(ctx, p.By, a); err != nil {
		return CreateResult{}, fmt.Errorf("create automation %s: %w", text.Shorten(p.Spec.Key, maxShown), err)
	}
	limit := 0
	if p.By.IsAgent() && s.Policy != nil {
		limit = s.Policy.MaxAutomations
	}
	return s.insert(ctx, a, limit)
}

// check normalizes a spec and checks that its target accepts its input.
func (s *Service) check(ctx context.Context, sp Spec) (normalized, error) {
	n, err := normalize(sp)
	if err != nil {
		return normalized{}, err
	}
	if _, err := s.Targets.Prepare(ctx, sp.Target, n.input); err != nil {
		return normalized{}, specErr("target", err)
	}
	return n, nil
}

// build checks a spec and makes the record to store.
func (s *Service) build(ctx context.Context, owner string, sp Spec) (*store.Automation, error) {
	n, err := s.check(ctx, sp)
	if err != nil {
		return nil, err
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

// insert stores a; limit > 0 is how many automations its owner may have
// (agents.max_automations).
func (s *Service) insert(ctx context.Context, a *store.Automation, limit int) (CreateResult, error) {
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
	if limit > 0 {
		if err := s.keepWithinLimit(ctx, a, limit); err != nil {
			return CreateResult{}, fmt.Errorf("create automation %s: %w", text.Shorten(a.Key, maxShown), err)
		}
	}
	s.notify()
	return CreateResult{Automation: a, Created: true}, nil
}

// ListParams select automations.
type ListParams struct {
	Owner string                    // "": every owner
	After *store.AutomationPosition // continue after this one
	Limit int                       // 0: all
}

// List returns automations, by owner then key.
func (s *Service) List(ctx context.Context, p ListParams) ([]*store.Automation, error) {
	return s.Store.ListAutomations(ctx, store.AutomationFilter{Owner: p.Owner, After: p.After, Limit: p.Limit})
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
