package automations

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"time"

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
	broken := rep.brokenSources(errs)
	wanted := rep.wanted(defs, now)
	existing, err := p.Store.ListAutomations(ctx, store.AutomationFilter{Owner: store.OwnerConfig})
	if err != nil {
		return rep, fmt.Errorf("sync workflow triggers: %w", err)
	}
	have := map[string]*store.Automation{}
	for _, a := range existing {
		have[a.Key] = a
	}
	for _, key := range slices.Sorted(maps.Keys(wanted)) {
		if w := wanted[key]; w.a != nil {
			if err := rep.put(ctx, p.Store, w.a, have[key], now); err != nil {
				return rep, fmt.Errorf("sync workflow triggers: %w", err)
			}
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

// brokenSources reports the files that did not load, whose automations
// are kept as they are.
func (rep *SyncReport) brokenSources(errs []error) map[string]bool {
	broken := map[string]bool{}
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
	return broken
}

// wantedTrigger is the automation one trigger asks for; a nil a means the
// trigger is invalid now and the stored automation is left alone.
type wantedTrigger struct{ a *store.Automation }

// wanted returns the automations the loaded workflows' triggers ask for,
// by key.
func (rep *SyncReport) wanted(defs map[string]*workflows.Workflow, now time.Time) map[string]wantedTrigger {
	wanted := map[string]wantedTrigger{}
	for _, name := range slices.Sorted(maps.Keys(defs)) {
		w := defs[name]
		src := filepath.Base(w.File)
		for i, t := range w.On {
			problem := func(err error) { rep.Problems = append(rep.Problems, fmt.Sprintf("%s: on[%d]: %v", src, i, err)) }
			key := ConfigKey(w.Name, i)
			if err := ids.Validate("automation key", key); err != nil {
				problem(err)
				continue
			}
			ev := ""
			if t.Every > 0 {
				ev = t.Every.String()
			}
			trig, err := normalizeTrigger(t.Cron, t.TZ, ev, t.Files, t.URL)
			if err != nil {
				problem(err)
				wanted[key] = wantedTrigger{}
				continue
			}
			wanted[key] = wantedTrigger{a: &store.Automation{
				ID: ids.New("aut"), Key: key, Owner: store.OwnerConfig, Target: w.Name,
				Trigger: trig, Enabled: true, Source: src, CreatedAt: now, UpdatedAt: now,
			}}
		}
	}
	return wanted
}

// put creates want, or updates cur (kept history, kept paused state) to
// match it.
func (rep *SyncReport) put(ctx context.Context, st store.Store, want, cur *store.Automation, now time.Time) error {
	if cur == nil {
		err := st.CreateAutomation(ctx, want)
		switch {
		case errors.Is(err, store.ErrExists): // another process was first
		case err != nil:
			return err
		default:
			rep.Created = append(rep.Created, want.Key)
		}
		return nil
	}
	if cur.Target == want.Target && cur.Source == want.Source && cur.Trigger.Equal(want.Trigger) {
		return nil
	}
	next := store.CloneAutomation(cur)
	next.Target, next.Source, next.Trigger, next.UpdatedAt = want.Target, want.Source, want.Trigger, now
	err := st.UpdateAutomation(ctx, next, cur.Revision)
	switch {
	case errors.Is(err, store.ErrStale) || errors.Is(err, store.ErrNotFound):
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s changed while syncing; the next sync retries", want.Key))
	case err != nil:
		return err
	default:
		rep.Updated = append(rep.Updated, want.Key)
	}
	return nil
}
