package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn/store"
)

// getRunTx reads a run inside a write transaction.
func (s *Store) getRunTx(ctx context.Context, tx *sql.Tx, id string) (*store.Run, error) {
	return runOrNotFound(s.txQueryRow(ctx, tx, qGetRun, id), id)
}

// qGetOwnedRun reads a run for an owner's write, which neither needs nor
// returns its literals.
var qGetOwnedRun = prepared("SELECT " + strings.Replace(runColumns, "literals", "'' AS literals", 1) + " FROM runs WHERE id = ?")

// ownedRunTx reads a run for an owner's write (without its literals); the
// transition checks the claim.
func (s *Store) ownedRunTx(ctx context.Context, tx *sql.Tx, id string) (*store.Run, error) {
	return runOrNotFound(s.txQueryRow(ctx, tx, qGetOwnedRun, id), id)
}

func runOrNotFound(row *sql.Row, id string) (*store.Run, error) {
	r, err := scanRun(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "run", ID: id}
	}
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	return r, nil
}

var qUpdateRun = prepared(`UPDATE runs SET status = ?, result = ?, error = ?, owner_pid = ?, claim = ?,
	cancel_requested = ?, question = ?, wake_at = ?, revision = ?, updated_at = ?, started_at = ?, finished_at = ?,
	journal = coalesce(?, journal), change_seq = ` + nextChange + ` WHERE id = ?`)

// updateRunTx writes r's mutable columns back (a transition set its
// revision and time).
func (s *Store) updateRunTx(ctx context.Context, tx *sql.Tx, r *store.Run) error {
	var question any
	if r.Question != nil {
		b, err := json.Marshal(r.Question)
		if err != nil {
			return fmt.Errorf("encode question of run %s: %w", r.ID, err)
		}
		question = string(b)
	}
	_, err := s.exec(ctx, tx, qUpdateRun,
		r.Status, nullJSON(r.Result), r.Error, r.OwnerPID, r.Claim, r.CancelRequested, question, nullTime(r.WakeAt),
		r.Revision, r.UpdatedAt.UnixMilli(), nullTime(r.StartedAt), nullTime(r.FinishedAt), nullJSON(r.Journal), r.ID)
	if err != nil {
		return fmt.Errorf("update run %s: %w", r.ID, err)
	}
	return nil
}

// runReader reads the run a write changes: getRunTx, or ownedRunTx for an
// owner's write.
type runReader func(s *Store, ctx context.Context, tx *sql.Tx, id string) (*store.Run, error)

var (
	readRun   runReader = (*Store).getRunTx
	readOwned runReader = (*Store).ownedRunTx
)

// runWrite reads run id in a write, lets apply compute its next record
// (with the store.Apply* transitions, writing any ledger change in tx),
// and writes it back. The run returned is valid only when the error is
// nil.
func (s *Store) runWrite(ctx context.Context, kind, id string, read runReader, apply func(tx *sql.Tx, cur *store.Run) (*store.Run, error)) (*store.Run, error) {
	var out *store.Run
	err := s.write(ctx, kind, func(tx *sql.Tx) error {
		cur, err := read(s, ctx, tx, id)
		if err != nil {
			return err
		}
		r, err := apply(tx, cur)
		if err != nil {
			return err
		}
		if err := s.updateRunTx(ctx, tx, r); err != nil {
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
func runOnly[P any](apply func(*store.Run, P) (*store.Run, error), p P) func(*sql.Tx, *store.Run) (*store.Run, error) {
	return func(_ *sql.Tx, cur *store.Run) (*store.Run, error) { return apply(cur, p) }
}

func (s *Store) ClaimRun(ctx context.Context, p store.ClaimParams) (*store.Claimed, error) {
	var claimed *store.Claimed
	_, err := s.runWrite(ctx, "run.claim", p.ID, readRun, func(_ *sql.Tx, cur *store.Run) (*store.Run, error) {
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
	return s.runWrite(ctx, "run.park", p.ID, readOwned, func(tx *sql.Tx, cur *store.Run) (*store.Run, error) {
		r, err := store.ApplyPark(cur, p)
		if err != nil {
			return nil, err
		}
		return r, s.enqueueAllTx(ctx, tx, p.Notify, p.Now)
	})
}

func (s *Store) ReleaseRun(ctx context.Context, id, claim string) (*store.Run, error) {
	p := store.ReleaseParams{ID: id, Claim: claim}
	return s.runWrite(ctx, "run.release", id, readOwned, runOnly(store.ApplyRelease, p))
}

func (s *Store) CancelRun(ctx context.Context, id, reason string) (*store.Run, error) {
	p := store.CancelParams{ID: id, Reason: reason}
	return s.runWrite(ctx, "run.cancel", id, readRun, runOnly(store.ApplyCancel, p))
}

func (s *Store) CancelToFinish(ctx context.Context, id, reason string) (*store.Run, error) {
	p := store.CancelParams{ID: id, Reason: reason}
	return s.runWrite(ctx, "run.cancel", id, readRun, runOnly(store.ApplyCancelToFinish, p))
}

func (s *Store) SettleRun(ctx context.Context, p store.SettleParams) (*store.Run, error) {
	return s.runWrite(ctx, "run.settle", p.ID, readOwned, func(tx *sql.Tx, cur *store.Run) (*store.Run, error) {
		r, err := store.ApplySettle(cur, p)
		if err != nil {
			return nil, err
		}
		if err := s.recordAllTx(ctx, tx, store.WriteLedger(p.ID, p.Claim, p.Now, p.Ledger)); err != nil {
			return nil, err
		}
		return r, s.enqueueAllTx(ctx, tx, p.Notify, p.Now)
	})
}

func (s *Store) AnswerRun(ctx context.Context, p store.AnswerParams) (*store.Run, error) {
	return s.runWrite(ctx, "run.answer", p.ID, readRun, func(tx *sql.Tx, cur *store.Run) (*store.Run, error) {
		var e *store.LedgerEntry
		if q := cur.Question; q != nil {
			var err error
			if e, err = s.getEntryTx(ctx, tx, cur.ID, q.Step, q.Position); err != nil {
				return nil, fmt.Errorf("answer run %s: %w", cur.ID, err)
			}
		}
		r, answered, err := store.ApplyAnswer(cur, e, p)
		if err != nil {
			return nil, err
		}
		return r, s.putEntryTx(ctx, tx, answered)
	})
}
