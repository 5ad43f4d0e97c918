package memory

import (
	"context"

	"github.com/cairnhq/cairn/store"
)

// runWrite finds run id and lets apply compute its next record (with the
// store.Apply* transitions) and the ledger change to commit with it; then
// stores both. apply must not touch the store's data: it reads cur and
// returns the change.
func (s *Store) runWrite(ctx context.Context, kind, id string, apply func(cur *store.Run) (next *store.Run, commit func(), err error)) (*store.Run, error) {
	var out *store.Run
	err := s.write(ctx, kind, func() error {
		cur, ok := s.runs.byID[id]
		if !ok {
			return &store.NotFoundError{Kind: "run", ID: id}
		}
		next, commit, err := apply(cur)
		if err != nil {
			return err
		}
		if commit != nil {
			commit()
		}
		s.runs.byID[id] = next.Clone()
		s.runs.changed(id)
		out = next.Clone()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// runOnly adapts a transition that changes no ledger entry to runWrite.
func runOnly[P any](apply func(*store.Run, P) (*store.Run, error), p P) func(*store.Run) (*store.Run, func(), error) {
	return func(cur *store.Run) (*store.Run, func(), error) {
		r, err := apply(cur, p)
		return r, nil, err
	}
}

// ownerResult is a run an owner's write returns: without its literals,
// as the SQLite store returns it.
func ownerResult(r *store.Run, err error) (*store.Run, error) {
	if r != nil {
		r.Literals = nil
	}
	return r, err
}

func (s *Store) ClaimRun(ctx context.Context, p store.ClaimParams) (*store.Claimed, error) {
	var claimed *store.Claimed
	r, err := s.runWrite(ctx, "run.claim", p.ID, func(cur *store.Run) (*store.Run, func(), error) {
		c, err := store.ApplyClaim(cur, p)
		if err != nil {
			return nil, nil, err
		}
		claimed = c
		return c.Run, nil, nil
	})
	if err != nil {
		return nil, err
	}
	claimed.Run = r
	return claimed, nil
}

func (s *Store) ParkRun(ctx context.Context, p store.ParkParams) (*store.Run, error) {
	return ownerResult(s.runWrite(ctx, "run.park", p.ID, func(cur *store.Run) (*store.Run, func(), error) {
		r, err := store.ApplyPark(cur, p)
		if err != nil {
			return nil, nil, err
		}
		enqueue, err := s.outbox.plan(p.Notify, p.Now)
		return r, enqueue, err
	}))
}

func (s *Store) ReleaseRun(ctx context.Context, id, claim string) (*store.Run, error) {
	p := store.ReleaseParams{ID: id, Claim: claim}
	return ownerResult(s.runWrite(ctx, "run.release", id, runOnly(store.ApplyRelease, p)))
}

func (s *Store) CancelRun(ctx context.Context, id, reason string) (*store.Run, error) {
	p := store.CancelParams{ID: id, Reason: reason}
	return s.runWrite(ctx, "run.cancel", id, runOnly(store.ApplyCancel, p))
}

func (s *Store) CancelToFinish(ctx context.Context, id, reason string) (*store.Run, error) {
	p := store.CancelParams{ID: id, Reason: reason}
	return s.runWrite(ctx, "run.cancel", id, runOnly(store.ApplyCancelToFinish, p))
}

func (s *Store) SettleRun(ctx context.Context, p store.SettleParams) (*store.Run, error) {
	return ownerResult(s.runWrite(ctx, "run.settle", p.ID, func(cur *store.Run) (*store.Run, func(), error) {
		r, err := store.ApplySettle(cur, p)
		if err != nil {
			return nil, nil, err
		}
		plan, err := s.runs.planFinishes(p.ID, store.WriteLedger(p.ID, p.Claim, p.Now, p.Ledger))
		if err != nil {
			return nil, nil, err
		}
		enqueue, err := s.outbox.plan(p.Notify, p.Now)
		if err != nil {
			return nil, nil, err
		}
		return r, func() { plan.commit(); enqueue() }, nil
	}))
}

func (s *Store) AnswerRun(ctx context.Context, p store.AnswerParams) (*store.Run, error) {
	return s.runWrite(ctx, "run.answer", p.ID, func(cur *store.Run) (*store.Run, func(), error) {
		var e *store.LedgerEntry
		if q := cur.Question; q != nil {
			e = s.runs.entry(cur.ID, q.Step, q.Position)
		}
		r, answered, err := store.ApplyAnswer(cur, e, p)
		if err != nil {
			return nil, nil, err
		}
		return r, func() { *e = *answered }, nil
	})
}
