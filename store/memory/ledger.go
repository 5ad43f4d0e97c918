package memory

import (
	"context"
	"time"

	"github.com/cairnhq/cairn/store"
)

// ledgerPlan is the ledger entries one operation writes, checked, to
// store with commit.
type ledgerPlan struct {
	d       *runsData
	runID   string
	entries []*store.LedgerEntry
}

// current returns call (path, pos)'s entry as the plan leaves it (the
// plan's own, else the stored one), or nil. It is not a copy.
func (p *ledgerPlan) current(path string, pos int) *store.LedgerEntry {
	for _, e := range p.entries {
		if e.Path == path && e.Position == pos {
			return e
		}
	}
	return p.d.entry(p.runID, path, pos)
}

// add plans e, replacing what the plan had for its call.
func (p *ledgerPlan) add(e *store.LedgerEntry) {
	for i, c := range p.entries {
		if c.Path == e.Path && c.Position == e.Position {
			p.entries[i] = e
			return
		}
	}
	p.entries = append(p.entries, e)
}

// commit stores the planned entries, numbering the new ones.
func (p *ledgerPlan) commit() {
	for _, e := range p.entries {
		if old := p.d.entry(p.runID, e.Path, e.Position); old != nil {
			*old = *e
			continue
		}
		e.Seq = int64(len(p.d.ledger[p.runID]) + 1)
		p.d.ledger[p.runID] = append(p.d.ledger[p.runID], e)
	}
}

// planFinishes plans the outcomes fs of run id's calls, in order, without
// changing anything. The caller holds the store's lock.
func (d *runsData) planFinishes(id string, fs []store.StepFinish) (*ledgerPlan, error) {
	p := &ledgerPlan{d: d, runID: id}
	for _, f := range fs {
		e, err := store.ApplyStepFinish(p.current(f.Path, f.Position), f)
		if err != nil {
			return nil, err
		}
		p.add(e)
	}
	return p, nil
}

// entry returns the stored ledger entry (not a copy), or nil.
func (d *runsData) entry(runID, path string, pos int) *store.LedgerEntry {
	for _, e := range d.ledger[runID] {
		if e.Path == path && e.Position == pos {
			return e
		}
	}
	return nil
}

// stepCall is an owner's ledger write: the call, and the outcomes
// recorded before it in the same operation.
type stepCall struct {
	runID, claim, path string
	pos                int
	now                time.Time
	before             []store.StepFinish
}

// stepWrite checks the owner and the run's status, records c.before, lets
// apply compute the call's entry from its current one, then stores it and
// bumps the run's revision.
func (s *Store) stepWrite(ctx context.Context, kind string, c stepCall, apply func(*store.LedgerEntry) (*store.LedgerEntry, error)) (*store.LedgerEntry, error) {
	if err := store.CheckCall(c.runID, c.path, c.pos); err != nil {
		return nil, err
	}
	var out *store.LedgerEntry
	_, err := s.runWrite(ctx, kind, c.runID, func(cur *store.Run) (*store.Run, func(), error) {
		r, err := store.ApplyStep(cur, c.claim, c.now)
		if err != nil {
			return nil, nil, err
		}
		plan, err := s.runs.planFinishes(c.runID, store.WriteLedger(c.runID, c.claim, c.now, c.before))
		if err != nil {
			return nil, nil, err
		}
		e, err := apply(plan.current(c.path, c.pos))
		if err != nil {
			return nil, nil, err
		}
		plan.add(e)
		return r, func() {
			plan.commit()
			out = e.Clone()
		}, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) StartStep(ctx context.Context, p store.StepStart) (*store.LedgerEntry, error) {
	c := stepCall{runID: p.RunID, claim: p.Claim, path: p.Path, pos: p.Position, now: p.Now, before: p.Ledger}
	return s.stepWrite(ctx, "run.step.start", c, func(e *store.LedgerEntry) (*store.LedgerEntry, error) {
		return store.ApplyStepStart(e, p)
	})
}

func (s *Store) FinishStep(ctx context.Context, p store.StepFinish) (*store.LedgerEntry, error) {
	c := stepCall{runID: p.RunID, claim: p.Claim, path: p.Path, pos: p.Position, now: p.Now}
	return s.stepWrite(ctx, "run.step.finish", c, func(e *store.LedgerEntry) (*store.LedgerEntry, error) {
		return store.ApplyStepFinish(e, p)
	})
}

func (s *Store) Ledger(ctx context.Context, runID string) ([]*store.LedgerEntry, error) {
	out := []*store.LedgerEntry{}
	err := s.read(func() error {
		if _, ok := s.runs.byID[runID]; !ok {
			return &store.NotFoundError{Kind: "run", ID: runID}
		}
		for _, e := range s.runs.ledger[runID] {
			out = append(out, e.Clone())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
