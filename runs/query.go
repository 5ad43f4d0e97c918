package runs

import (
	"context"
	"fmt"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// Get returns a run with its steps.
func (e *Engine) Get(ctx context.Context, id string) (*Run, error) {
	if err := ids.Validate("run id", id); err != nil {
		return nil, err
	}
	r, err := e.st.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	v, err := e.view(ctx, r, true)
	if err != nil {
		return nil, err
	}
	e.noteStalls(ctx, v)
	return v, nil
}

// ListParams select runs.
type ListParams struct {
	Status []store.RunStatus
	Target string
	Limit  int    // default 50, at most 1000
	Cursor string // from a previous page
}

// List returns runs newest first, with their steps as the ledger records
// them, and the cursor of the next page ("" at the end).
func (e *Engine) List(ctx context.Context, p ListParams) ([]*Run, string, error) {
	for _, s := range p.Status {
		if !s.Valid() {
			return nil, "", fmt.Errorf("list runs: unknown status %q (use queued, running, waiting, succeeded, failed or cancelled)", s)
		}
	}
	if p.Target != "" {
		if err := ids.Validate("target", p.Target); err != nil {
			return nil, "", err
		}
	}
	rs, next, err := e.st.ListRuns(ctx, store.RunFilter{Status: p.Status, Target: p.Target, Limit: p.Limit, Cursor: p.Cursor})
	if err != nil {
		return nil, "", err
	}
	out := make([]*Run, 0, len(rs))
	for _, r := range rs {
		v, err := e.view(ctx, r, false)
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	e.noteStalls(ctx, out...)
	return out, next, nil
}

// Executing reports how many runs this engine is executing.
func (e *Engine) Executing() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.active)
}

// Busy reports whether there is run work for a peer to stay up for: runs
// executing here, or runs queued, running, or waiting with a wake time.
// Runs waiting only for an answer do not count: whoever answers starts
// the work again.
func (e *Engine) Busy(ctx context.Context) (bool, error) {
	if e.Executing() > 0 {
		return true, nil
	}
	n, err := e.st.CountPending(ctx)
	return n > 0, err
}
