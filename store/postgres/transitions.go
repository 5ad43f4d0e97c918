package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/store"
	"github.com/jackc/pgx/v5"
)

// lockMode is how a write reads the run it changes.
type lockMode struct {
	columns string // runColumns, or ownedColumns for an owner's write
	skip    bool   // FOR UPDATE SKIP LOCKED: refuse a run another write holds
}

var (
	lockRun   = lockMode{columns: runColumns}
	lockOwned = lockMode{columns: ownedColumns}
	lockClaim = lockMode{columns: runColumns, skip: true}
)

// readRunTx reads run id in tx and locks its row until tx ends. With
// m.skip a row locked by another write is not waited for: the claim is
// refused with a *store.RunStateError, as a run another peer is taking.
func readRunTx(ctx context.Context, tx pgx.Tx, id string, m lockMode) (*store.Run, error) {
	q := "SELECT " + m.columns + " FROM runs WHERE id = $1 FOR UPDATE"
	if m.skip {
		q += " SKIP LOCKED"
	}
	r, err := scanRun(tx.QueryRow(ctx, q, id))
	if errors.Is(err, pgx.ErrNoRows) {
		if m.skip {
			return nil, busyOrMissing(ctx, tx, id)
		}
		return nil, &store.NotFoundError{Kind: "run", ID: id}
	}
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	return r, nil
}

// busyOrMissing tells a run locked by another write from a missing one.
func busyOrMissing(ctx context.Context, tx pgx.Tx, id string) error {
	var status store.RunStatus
	err := tx.QueryRow(ctx, "SELECT status FROM runs WHERE id = $1", id).Scan(&status)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return &store.NotFoundError{Kind: "run", ID: id}
	case err != nil:
		return fmt.Errorf("read run %s: %w", id, err)
	}
	return fmt.Errorf("another process is writing run %s now: %w", id, &store.RunStateError{ID: id, Status: status, Op: "claim"})
}

// updateRunTx writes r's mutable columns back (a transition set its
// revision and time) and gives the run the next change number.
func updateRunTx(ctx context.Context, tx pgx.Tx, r *store.Run) error {
	question, err := questionText(r)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "WITH c AS "+nextChange+` UPDATE runs SET status = $1, result = $2, error = $3, owner_pid = $4,
		claim = $5, cancel_requested = $6, question = $7, wake_at = $8, revision = $9, updated_at = $10, started_at = $11,
		finished_at = $12, journal = coalesce($13, journal), change_seq = (SELECT last FROM c) WHERE id = $14`,
		r.Status, nullJSON(r.Result), r.Error, r.OwnerPID, r.Claim, r.CancelRequested, question, nullTime(r.WakeAt),
		r.Revision, r.UpdatedAt, nullTime(r.StartedAt), nullTime(r.FinishedAt), journalBytes(r.Journal), r.ID)
	if err != nil {
		return fmt.Errorf("update run %s: %w", r.ID, err)
	}
	return nil
}

// runWrite reads run id in a write, locking it, lets apply compute its
// next record (with the store.Apply* transitions, writing any ledger
// change in tx), and writes it back. The run returned is valid only when
// the error is nil.
func (s *Store) runWrite(ctx context.Context, kind, id string, m lockMode, apply func(tx pgx.Tx, cur *store.Run) (*store.Run, error)) (*store.Run, error) {
	var out *store.Run
	err := s.write(ctx, kind, func(tx pgx.Tx) error {
		cur, err := readRunTx(ctx, tx, id, m)
		if err != nil {
			return err
		}
		r, err := apply(tx, cur)
		if err != nil {
			return err
		}
		if err := updateRunTx(ctx, tx, r); err != nil {
			return err
		}
		out = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// runOnly adapts a transition that changes no ledger entry to runWrite.
func runOnly[P any](apply func(*store.Run, P) (*store.Run, error), p P) func(pgx.Tx, *store.Run) (*store.Run, error) {
	return func(_ pgx.Tx, cur *store.Run) (*store.Run, error) { return apply(cur, p) }
}

func (s *Store) ClaimRun(ctx context.Context, p store.ClaimParams) (*store.Claimed, error) {
	var claimed *store.Claimed
	_, err := s.runWrite(ctx, "run.claim", p.ID, lockClaim, func(_ pgx.Tx, cur *store.Run) (*store.Run, error) {
		c, err := store.ApplyClaim(cur, p)
		if err != nil {
			return nil, err
		}
		claimed = c
		return c.Run, nil
	})
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

func (s *Store) ParkRun(ctx context.Context, p store.ParkParams) (*store.Run, error) {
	return s.runWrite(ctx, "run.park", p.ID, lockOwned, func(tx pgx.Tx, cur *store.Run) (*store.Run, error) {
		r, err := store.ApplyPark(cur, p)
		if err != nil {
			return nil, err
		}
		return r, s.enqueueAllTx(ctx, tx, p.Notify, p.Now)
	})
}

func (s *Store) ReleaseRun(ctx context.Context, id, claim string) (*store.Run, error) {
	p := store.ReleaseParams{ID: id, Claim: claim}
	return s.runWrite(ctx, "run.release", id, lockOwned, runOnly(store.ApplyRelease, p))
}

func (s *Store) CancelRun(ctx context.Context, id, reason string) (*store.Run, error) {
	p := store.CancelParams{ID: id, Reason: reason}
	return s.runWrite(ctx, "run.cancel", id, lockRun, runOnly(store.ApplyCancel, p))
}

func (s *Store) CancelToFinish(ctx context.Context, id, reason string) (*store.Run, error) {
	p := store.CancelParams{ID: id, Reason: reason}
	return s.runWrite(ctx, "run.cancel", id, lockRun, runOnly(store.ApplyCancelToFinish, p))
}

func (s *Store) SettleRun(ctx context.Context, p store.SettleParams) (*store.Run, error) {
	return s.runWrite(ctx, "run.settle", p.ID, lockOwned, func(tx pgx.Tx, cur *store.Run) (*store.Run, error) {
		r, err := store.ApplySettle(cur, p)
		if err != nil {
			return nil, err
		}
		if err := recordAllTx(ctx, tx, store.WriteLedger(p.ID, p.Claim, p.Now, p.Ledger)); err != nil {
			return nil, err
		}
		return r, s.enqueueAllTx(ctx, tx, p.Notify, p.Now)
	})
}

func (s *Store) AnswerRun(ctx context.Context, p store.AnswerParams) (*store.Run, error) {
	return s.runWrite(ctx, "run.answer", p.ID, lockRun, func(tx pgx.Tx, cur *store.Run) (*store.Run, error) {
		var e *store.LedgerEntry
		if q := cur.Question; q != nil {
			var err error
			if e, err = getEntryTx(ctx, tx, cur.ID, q.Step, q.Position); err != nil {
				return nil, fmt.Errorf("answer run %s: %w", cur.ID, err)
			}
		}
		r, answered, err := store.ApplyAnswer(cur, e, p)
		if err != nil {
			return nil, err
		}
		return r, putEntryTx(ctx, tx, answered)
	})
}
