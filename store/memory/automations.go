package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cairnhq/cairn/automations/policy"
	"github.com/cairnhq/cairn/store"
)

type automationsData struct {
	byID    map[string]*store.Automation
	fires   map[string][]*store.AutomationFire // by automation id, oldest first
	version int64
}

func (d *automationsData) init() {
	d.byID = make(map[string]*store.Automation)
	d.fires = make(map[string][]*store.AutomationFire)
}

func (d *automationsData) count() int { return len(d.byID) }

func (d *automationsData) byKey(owner, key string) *store.Automation {
	for _, a := range d.byID {
		if a.Owner == owner && a.Key == key {
			return a
		}
	}
	return nil
}

func (s *Store) CreateAutomation(ctx context.Context, a *store.Automation) error {
	policy.PrepareNew(a)
	return s.write(ctx, "automation.create", func() error {
		if old := s.autos.byKey(a.Owner, a.Key); old != nil {
			return &store.AutomationExistsError{Existing: store.CloneAutomation(old)}
		}
		if _, ok := s.autos.byID[a.ID]; ok {
			return fmt.Errorf("create automation %s: %w", a.ID, store.ErrExists)
		}
		s.autos.byID[a.ID] = store.CloneAutomation(a)
		s.autos.version++
		return nil
	})
}

func (s *Store) GetAutomation(ctx context.Context, id string) (*store.Automation, error) {
	var out *store.Automation
	err := s.read(func() error {
		a, ok := s.autos.byID[id]
		if !ok {
			return &store.NotFoundError{Kind: "automation", ID: id}
		}
		out = store.CloneAutomation(a)
		return nil
	})
	return out, err
}

func (s *Store) ListAutomations(ctx context.Context, f store.AutomationFilter) ([]*store.Automation, error) {
	out := []*store.Automation{}
	err := s.read(func() error {
		for _, a := range s.autos.byID {
			if (f.Owner == "" || a.Owner == f.Owner) && (f.Key == "" || a.Key == f.Key) &&
				(f.After == nil || cmp.Or(cmp.Compare(a.Owner, f.After.Owner), cmp.Compare(a.Key, f.After.Key)) > 0) {
				out = append(out, a)
			}
		}
		slices.SortFunc(out, func(a, b *store.Automation) int {
			return cmp.Or(cmp.Compare(a.Owner, b.Owner), cmp.Compare(a.Key, b.Key))
		})
		if f.Limit > 0 && len(out) > f.Limit {
			out = out[:f.Limit]
		}
		for i, a := range out {
			out[i] = store.CloneAutomation(a)
		}
		return nil
	})
	return out, err
}

func (s *Store) UpdateAutomation(ctx context.Context, a *store.Automation, expected int64) error {
	var out *store.Automation
	err := s.write(ctx, "automation.update", func() error {
		cur, ok := s.autos.byID[a.ID]
		if !ok {
			return &store.NotFoundError{Kind: "automation", ID: a.ID}
		}
		if cur.Revision != expected {
			return &store.StaleError{Kind: "automation", ID: a.ID, Expected: expected, Actual: cur.Revision}
		}
		next := policy.ApplyUpdate(cur, a, a.UpdatedAt)
		s.autos.byID[a.ID] = next
		s.autos.version++
		out = store.CloneAutomation(next)
		return nil
	})
	if err != nil {
		return err
	}
	*a = *out
	return nil
}

func (s *Store) DeleteAutomation(ctx context.Context, id string, expected int64) error {
	return s.write(ctx, "automation.delete", func() error {
		cur, ok := s.autos.byID[id]
		if !ok {
			return &store.NotFoundError{Kind: "automation", ID: id}
		}
		if expected != 0 && cur.Revision != expected {
			return &store.StaleError{Kind: "automation", ID: id, Expected: expected, Actual: cur.Revision}
		}
		delete(s.autos.byID, id)
		delete(s.autos.fires, id)
		s.autos.version++
		return nil
	})
}

func (s *Store) Fire(ctx context.Context, p store.FireParams) (store.FireResult, error) {
	var res store.FireResult
	err := s.write(ctx, "automation.fire", func() error {
		if err := s.checkFences(p.Lease); err != nil {
			return err
		}
		var err error
		res, err = s.fire(p)
		return err
	})
	if err != nil {
		return store.FireResult{}, err
	}
	return res, nil
}

func (s *Store) FireMany(ctx context.Context, ps []store.FireParams) ([]store.FireOutcome, error) {
	out := make([]store.FireOutcome, len(ps))
	if len(ps) == 0 {
		return out, nil
	}
	err := s.write(ctx, "automation.fire_many", func() error {
		for _, p := range ps {
			if err := s.checkFences(p.Lease); err != nil {
				return err
			}
		}
		for i, p := range ps {
			out[i].Result, out[i].Err = s.fire(p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// fire decides and records one fire under the store lock. It checks
// everything before it changes anything, so a refused fire changes
// nothing. The result is the caller's own copy.
func (s *Store) fire(p store.FireParams) (store.FireResult, error) {
	a, ok := s.autos.byID[p.AutomationID]
	if !ok {
		return store.FireResult{}, &store.NotFoundError{Kind: "automation", ID: p.AutomationID}
	}
	var last *store.Run
	if r, ok := s.runs.byID[a.State.LastRunID]; ok {
		last = r
	}
	nominal := p.Nominal.UTC().Truncate(time.Millisecond)
	fires := s.autos.fires[a.ID]
	var existing *store.AutomationFire
	at := slices.IndexFunc(fires, func(f *store.AutomationFire) bool { return f.Nominal.Equal(nominal) })
	if at >= 0 {
		c := *fires[at]
		existing = &c
	}
	plan, err := policy.PlanFire(a, last, existing, p)
	if err != nil {
		return store.FireResult{}, err
	}
	res := plan.Result
	if res.Fire != nil {
		c := *res.Fire
		res.Fire = &c
	}
	if !plan.Insert && !plan.Update {
		return res, nil
	}
	if plan.QueueRun {
		// insert copies the run; check first so nothing changes on error.
		if _, taken := s.runs.byID[plan.Result.Run.ID]; taken {
			return store.FireResult{}, fmt.Errorf("create run %s: %w", plan.Result.Run.ID, store.ErrExists)
		}
		if err := s.runs.insert(plan.Result.Run); err != nil {
			return store.FireResult{}, err
		}
	}
	f := *plan.Result.Fire
	if plan.Insert {
		fires = append(fires, &f)
		slices.SortFunc(fires, func(x, y *store.AutomationFire) int { return x.Nominal.Compare(y.Nominal) })
		if n := len(fires); n > store.FireHistory {
			fires = slices.Clone(fires[n-store.FireHistory:])
		}
	} else {
		fires[at] = &f
	}
	s.autos.fires[a.ID] = fires
	next := store.CloneAutomation(a)
	next.State = plan.State
	next.State.Pending = plan.State.Pending.Clone()
	s.autos.byID[a.ID] = next
	return res, nil
}

func (s *Store) RecordAutomation(ctx context.Context, p store.RecordParams) (*store.Automation, error) {
	var out *store.Automation
	err := s.write(ctx, "automation.record", func() error {
		if err := s.checkFences(p.Lease); err != nil {
			return err
		}
		a, ok := s.autos.byID[p.AutomationID]
		if !ok {
			return &store.NotFoundError{Kind: "automation", ID: p.AutomationID}
		}
		next, paused, err := policy.PlanRecord(a, p)
		if err != nil {
			return err
		}
		if paused {
			enqueue, err := s.outbox.plan(p.Pause.Notify, p.Pause.At)
			if err != nil {
				return err
			}
			enqueue()
			s.autos.version++
		}
		s.autos.byID[a.ID] = store.CloneAutomation(next)
		out = next
		return nil
	})
	return out, err
}

func (s *Store) ListFires(ctx context.Context, automationID string, limit int) ([]*store.AutomationFire, error) {
	if limit <= 0 || limit > store.FireHistory {
		limit = store.FireHistory
	}
	out := []*store.AutomationFire{}
	err := s.read(func() error {
		fires := s.autos.fires[automationID]
		for i := len(fires) - 1; i >= 0 && len(out) < limit; i-- {
			c := *fires[i]
			if r, ok := s.runs.byID[c.RunID]; ok && c.RunID != "" {
				c.RunStatus = r.Status
			}
			out = append(out, &c)
		}
		return nil
	})
	return out, err
}

func (s *Store) AutomationsVersion(ctx context.Context) (int64, error) {
	var v int64
	err := s.read(func() error {
		v = s.autos.version
		return nil
	})
	return v, err
}
