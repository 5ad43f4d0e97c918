package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
)

type runsData struct {
	byID map[string]*store.Run
}

func (d *runsData) init() { d.byID = make(map[string]*store.Run) }

func (d *runsData) count() int { return len(d.byID) }

// insert adds a copy of r, filling defaults as the SQLite store does.
// The caller holds the store's lock.
func (d *runsData) insert(r *store.Run) error {
	if _, ok := d.byID[r.ID]; ok {
		return fmt.Errorf("create run %s: %w", r.ID, store.ErrExists)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if r.Status == "" {
		r.Status = store.RunQueued
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	r.UpdatedAt, r.Revision = now, 1
	if len(r.Input) == 0 {
		r.Input = json.RawMessage("{}")
	}
	d.byID[r.ID] = cloneRun(r)
	return nil
}

func (s *Store) CreateRun(ctx context.Context, r *store.Run) error {
	return s.write(ctx, "run.create", func() error { return s.runs.insert(r) })
}

func (s *Store) GetRun(ctx context.Context, id string) (*store.Run, error) {
	var out *store.Run
	err := s.read(func() error {
		r, ok := s.runs.byID[id]
		if !ok {
			return &store.NotFoundError{Kind: "run", ID: id}
		}
		out = cloneRun(r)
		return nil
	})
	return out, err
}

// cloneRun copies a run so callers never share memory with the store.
func cloneRun(r *store.Run) *store.Run {
	c := *r
	c.Input = append(json.RawMessage(nil), r.Input...)
	c.Literals = append(json.RawMessage(nil), r.Literals...)
	c.Result = append(json.RawMessage(nil), r.Result...)
	if len(r.Result) == 0 {
		c.Result = nil
	}
	return &c
}
