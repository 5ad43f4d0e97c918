package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn/store"
)

type runsData struct {
	byID   map[string]*store.Run
	ledger map[string][]*store.LedgerEntry // by run id, in seq order
	seq    map[string]int64                // by run id: the number of its latest change
	last   int64                           // the latest change number
}

// changed gives run id the next change number. The caller holds the
// store's lock.
func (d *runsData) changed(id string) {
	d.last++
	d.seq[id] = d.last
}

func (d *runsData) init() {
	d.byID = make(map[string]*store.Run)
	d.ledger = make(map[string][]*store.LedgerEntry)
	d.seq = make(map[string]int64)
}

func (d *runsData) count() int { return len(d.byID) }

// insert adds a copy of r, filling defaults as the SQLite store does.
// The caller holds the store's lock.
func (d *runsData) insert(r *store.Run) error {
	if _, ok := d.byID[r.ID]; ok {
		return fmt.Errorf("create run %s: %w", r.ID, store.ErrExists)
	}
	r.SetCreateDefaults()
	d.byID[r.ID] = r.Clone()
	d.changed(r.ID)
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
		out = r.Clone()
		return nil
	})
	return out, err
}

func newestFirst(a, b *store.Run) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(b.ID, a.ID)
}

func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]*store.Run, string, error) {
	limit := f.ListLimit()
	var (
		curMS int64
		curID string
	)
	if f.Cursor != "" {
		var err error
		if curMS, curID, err = store.ParseRunCursor(f.Cursor); err != nil {
			return nil, "", err
		}
	}
	var out []*store.Run
	err := s.read(func() error {
		for _, r := range s.runs.byID {
			switch {
			case len(f.Status) > 0 && !slices.Contains(f.Status, r.Status):
				continue
			case f.Target != "" && r.Target != f.Target:
				continue
			case !f.UpdatedAfter.IsZero() && r.UpdatedAt.UnixMilli() <= f.UpdatedAfter.UnixMilli():
				continue
			case f.Cursor != "" && !(r.CreatedAt.UnixMilli() < curMS || r.CreatedAt.UnixMilli() == curMS && r.ID < curID):
				continue
			}
			c := r.Clone()
			c.Journal = nil // GetRun only
			out = append(out, c)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	slices.SortFunc(out, newestFirst)
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = store.RunCursor(out[limit-1])
	}
	return out, next, nil
}

func (s *Store) RunnableRuns(ctx context.Context, now time.Time, limit int) ([]*store.Run, error) {
	if limit <= 0 {
		limit = 50
	}
	var out []*store.Run
	err := s.read(func() error {
		for _, r := range s.runs.byID {
			if r.Runnable(now) {
				c := r.Clone()
				c.Literals, c.Journal = nil, nil
				out = append(out, c)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b *store.Run) int {
		if ar, br := a.Status == store.RunRunning, b.Status == store.RunRunning; ar != br {
			if ar {
				return 1
			}
			return -1
		}
		return newestFirst(b, a)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (s *Store) CountPending(ctx context.Context) (int, error) {
	n := 0
	err := s.read(func() error {
		for _, r := range s.runs.byID {
			if r.Status == store.RunQueued || r.Status == store.RunRunning || r.Status == store.RunWaiting && !r.WakeAt.IsZero() {
				n++
			}
		}
		return nil
	})
	return n, err
}

func (s *Store) RunClaims(ctx context.Context, ids []string) ([]store.RunClaim, error) {
	var out []store.RunClaim
	err := s.read(func() error {
		for _, id := range ids {
			if r, ok := s.runs.byID[id]; ok {
				out = append(out, store.RunClaim{ID: r.ID, Status: r.Status, Claim: r.Claim, CancelRequested: r.CancelRequested})
			}
		}
		return nil
	})
	return out, err
}

func (s *Store) ChangedRuns(ctx context.Context, after int64, limit int) ([]store.RunChange, error) {
	if limit <= 0 || limit > store.MaxListLimit {
		limit = store.MaxListLimit
	}
	var out []store.RunChange
	err := s.read(func() error {
		for id, n := range s.runs.seq {
			if n > after {
				out = append(out, store.RunChange{ID: id, Revision: s.runs.byID[id].Revision, Seq: n})
			}
		}
		return nil
	})
	slices.SortFunc(out, func(a, b store.RunChange) int { return cmp.Compare(a.Seq, b.Seq) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, err
}

func (s *Store) LastRunChange(ctx context.Context) (int64, error) {
	var n int64
	err := s.read(func() error {
		n = s.runs.last
		return nil
	})
	return n, err
}
