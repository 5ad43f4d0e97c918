package automations

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

// SyncParams sync workflow files' `on:` triggers into automations.
type SyncParams struct {
	Store store.Store
	Dir   string      // the workflows folder
	Clock clock.Clock // nil: the real clock
}

// SyncReport says what a sync changed, by automation key.
type SyncReport struct {
	Created  []string `json:"created"`
	Updated  []string `json:"updated"`
	Deleted  []string `json:"deleted"`
	Problems []string `json:"problems"`
}

// ConfigKey is the key of the automation for trigger index i of a
// workflow: "<workflow>:<i>".
func ConfigKey(workflow string, i int) string { return workflow + ":" + strconv.Itoa(i) }

// Sync makes the OwnerConfig automations match the `on:` triggers of the
// workflow files in p.Dir: one automation per trigger, keyed
// ConfigKey(workflow, index), targeting its workflow with an empty input.
// New triggers are created, changed ones updated (keeping their history and
// their paused state), removed ones deleted. A file that does not load, or
// a trigger that is invalid, is reported in Problems and its automations
// are left as they were, so a half-saved file does not wipe their history.
// Concurrent syncs from several processes are safe: each change is one
// idempotent or revision-checked store write.
func Sync(ctx context.Context, p SyncParams) (SyncReport, error) {
	rep := SyncReport{Created: []string{}, Updated: []string{}, Deleted: []string{}, Problems: []string{}}
	now := clock.OrReal(p.Clock).Now()
	defs, errs := workflows.LoadDir(p.Dir)
	broken := map[string]bool{} // source files whose automations are kept
	for _, err := range errs {
		rep.Problems = append(rep.Problems, err.Error())
		var we *workflows.Error
		if errors.As(err, &we) {
			broken[filepath.Base(we.File)] = true
		}
		var de *workflows.DuplicateError
		if errors.As(err, &de) {
			for _, f := range de.Files {
				broken[filepath.Base(f)] = true
			}
		}
	}
	type want struct {
		a    *store.Automation
		keep bool // invalid now: leave the stored one alone
	}
	wanted := map[string]want{}
	names := make([]string, 0, len(defs))
	for name := range defs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		w := defs[name]
		src := filepath.Base(w.File)
		for i, t := range w.On {
			key := ConfigKey(w.Name, i)
			if err := ids.Validate("automation key", key); err != nil {
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s: on[%d]: %v", src, i, err))
				continue
			}
			ev := ""
			if t.Every > 0 {
				ev = t.Every.String()
			}
			trig, err := normalizeTrigger(t.Cron, t.TZ, ev, t.Files, t.URL)
			if err != nil {
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s: on[%d]: %v", src, i, err))
				wanted[key] = want{keep: true}
				continue
			}
			wanted[key] = want{a: &store.Automation{
				ID: ids.New("aut"), Key: key, Owner: store.OwnerConfig, Target: w.Name,
				Trigger: trig, Enabled: true, Source: src, CreatedAt: now, UpdatedAt: now,
			}}
		}
	}
	existing, err := p.Store.ListAutomations(ctx, store.AutomationFilter{Owner: store.OwnerConfig})
	if err != nil {
		return rep, fmt.Errorf("sync workflow triggers: %w", err)
	}
	have := map[string]*store.Automation{}
	for _, a := range existing {
		have[a.Key] = a
	}
	keys := make([]string, 0, len(wanted))
	for k := range wanted {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		w := wanted[key]
		if w.keep {
			continue
		}
		cur, ok := have[key]
		if !ok {
			err := p.Store.CreateAutomation(ctx, w.a)
			switch {
			case errors.Is(err, store.ErrExists): // another process was first
			case err != nil:
				return rep, fmt.Errorf("sync workflow triggers: %w", err)
			default:
				rep.Created = append(rep.Created, key)
			}
			continue
		}
		if cur.Target == w.a.Target && cur.Source == w.a.Source && cur.Trigger.Equal(w.a.Trigger) {
			continue
		}
		next := store.CloneAutomation(cur)
		next.Target, next.Source, next.Trigger, next.UpdatedAt = w.a.Target, w.a.Source, w.a.Trigger, now
		err := p.Store.UpdateAutomation(ctx, next, cur.Revision)
		switch {
		case errors.Is(err, store.ErrStale) || errors.Is(err, store.ErrNotFound):
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s changed while syncing; the next sync retries", key))
		case err != nil:
			return rep, fmt.Errorf("sync workflow triggers: %w", err)
		default:
			rep.Updated = append(rep.Updated, key)
		}
	}
	for _, a := range existing {
		if _, ok := wanted[a.Key]; ok || broken[a.Source] {
			continue
		}
		err := p.Store.DeleteAutomation(ctx, a.ID, 0)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return rep, fmt.Errorf("sync workflow triggers: %w", err)
		default:
			rep.Deleted = append(rep.Deleted, a.Key)
		}
	}
	return rep, nil
}
