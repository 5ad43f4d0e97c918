package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
	"github.com/jackc/pgx/v5"
)

const ledgerColumns = "run_id, path, position, seq, kind, state, status, starts, detail, result, error, answer, owner_pid, started_at, finished_at"

func scanLedger(row pgx.Row) (*store.LedgerEntry, error) {
	var (
		e                      store.LedgerEntry
		detail, result, answer *string
		started, finished      *time.Time
	)
	if err := row.Scan(&e.RunID, &e.Path, &e.Position, &e.Seq, &e.Kind, &e.State, &e.Status, &e.Starts,
		&detail, &result, &e.Error, &answer, &e.OwnerPID, &started, &finished); err != nil {
		return nil, err
	}
	e.Detail, e.Result, e.Answer = rawOf(detail), rawOf(result), answer
	e.StartedAt, e.FinishedAt = timeOf(started), timeOf(finished)
	return &e, nil
}

// getEntryTx reads a call's entry in tx; nil when there is none. The
// run's row lock, which every ledger write holds, keeps it current.
func getEntryTx(ctx context.Context, tx pgx.Tx, runID, path string, pos int) (*store.LedgerEntry, error) {
	e, err := scanLedger(tx.QueryRow(ctx, "SELECT "+ledgerColumns+" FROM run_ledger WHERE run_id = $1 AND path = $2 AND position = $3", runID, path, pos))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return e, err
}

// putEntryTx inserts or replaces a ledger entry; one with Seq 0 takes
// the run's next number.
func putEntryTx(ctx context.Context, tx pgx.Tx, e *store.LedgerEntry) error {
	if e.Seq == 0 {
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(seq), 0) + 1 FROM run_ledger WHERE run_id = $1", e.RunID).Scan(&e.Seq); err != nil {
			return fmt.Errorf("number step %s of run %s: %w", e.Path, e.RunID, err)
		}
	}
	_, err := tx.Exec(ctx, "INSERT INTO run_ledger ("+ledgerColumns+") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15) "+
		"ON CONFLICT (run_id, path, position) DO UPDATE SET seq = excluded.seq, kind = excluded.kind, state = excluded.state, "+
		"status = excluded.status, starts = excluded.starts, detail = excluded.detail, result = excluded.result, error = excluded.error, "+
		"answer = excluded.answer, owner_pid = excluded.owner_pid, started_at = excluded.started_at, finished_at = excluded.finished_at",
		e.RunID, e.Path, e.Position, e.Seq, e.Kind, e.State, e.Status, e.Starts, nullJSON(e.Detail), nullJSON(e.Result),
		e.Error, e.Answer, e.OwnerPID, nullTime(e.StartedAt), nullTime(e.FinishedAt))
	if err != nil {
		return fmt.Errorf("record step %s of run %s: %w", e.Path, e.RunID, err)
	}
	return nil
}

// stepWrite runs a ledger change for the owner (claim) of a running run,
// at now, and bumps the run's revision: apply returns the entry to store.
func (s *Store) stepWrite(ctx context.Context, kind, runID, claim string, now time.Time, apply func(tx pgx.Tx) (*store.LedgerEntry, error)) (*store.LedgerEntry, error) {
	var out *store.LedgerEntry
	_, err := s.runWrite(ctx, kind, runID, lockOwned, func(tx pgx.Tx, cur *store.Run) (*store.Run, error) {
		r, err := store.ApplyStep(cur, claim, now)
		if err != nil {
			return nil, err
		}
		e, err := apply(tx)
		if err != nil {
			return nil, err
		}
		out = e
		return r, putEntryTx(ctx, tx, e)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) StartStep(ctx context.Context, p store.StepStart) (*store.LedgerEntry, error) {
	if err := store.CheckCall(p.RunID, p.Path, p.Position); err != nil {
		return nil, err
	}
	return s.stepWrite(ctx, "run.step.start", p.RunID, p.Claim, p.Now, func(tx pgx.Tx) (*store.LedgerEntry, error) {
		if err := recordAllTx(ctx, tx, store.WriteLedger(p.RunID, p.Claim, p.Now, p.Ledger)); err != nil {
			return nil, err
		}
		e, err := getEntryTx(ctx, tx, p.RunID, p.Path, p.Position)
		if err != nil {
			return nil, err
		}
		return store.ApplyStepStart(e, p)
	})
}

func (s *Store) FinishStep(ctx context.Context, p store.StepFinish) (*store.LedgerEntry, error) {
	if err := store.CheckCall(p.RunID, p.Path, p.Position); err != nil {
		return nil, err
	}
	return s.stepWrite(ctx, "run.step.finish", p.RunID, p.Claim, p.Now, func(tx pgx.Tx) (*store.LedgerEntry, error) {
		e, err := getEntryTx(ctx, tx, p.RunID, p.Path, p.Position)
		if err != nil {
			return nil, err
		}
		return store.ApplyStepFinish(e, p)
	})
}

// qRecordOutcome records a call's outcome: a new entry for a call never
// started, or the finish of a started one; nothing for a finished one.
const qRecordOutcome = `INSERT INTO run_ledger (run_id, path, position, seq, kind, state, status, starts, result, error, owner_pid, finished_at)
	VALUES ($1, $2, $3, (SELECT coalesce(max(seq), 0) + 1 FROM run_ledger WHERE run_id = $1), $4, 'finished', $5, 0, $6, $7, 0, $8)
	ON CONFLICT (run_id, path, position) DO UPDATE SET kind = CASE WHEN run_ledger.kind = '' THEN excluded.kind ELSE run_ledger.kind END,
	state = 'finished', status = excluded.status, result = excluded.result, error = excluded.error, finished_at = excluded.finished_at
	WHERE run_ledger.state = 'started'`

// recordTx records a call's outcome in one statement, without reading the
// entry: the rule of store.ApplyStepFinish in SQL, since an owner records
// many outcomes this way (see SettleParams.Ledger).
func recordTx(ctx context.Context, tx pgx.Tx, p store.StepFinish) error {
	if err := store.CheckCall(p.RunID, p.Path, p.Position); err != nil {
		return err
	}
	now := store.Millis(store.At(p.Now))
	tag, err := tx.Exec(ctx, qRecordOutcome, p.RunID, p.Path, p.Position, p.Kind, p.Status, nullJSON(p.Result), p.Error, now)
	if err != nil {
		return fmt.Errorf("record step %s of run %s: %w", p.Path, p.RunID, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return store.FinishedError(p)
}

// recordAllTx records the outcomes fs in order (see recordTx).
func recordAllTx(ctx context.Context, tx pgx.Tx, fs []store.StepFinish) error {
	for _, f := range fs {
		if err := recordTx(ctx, tx, f); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) Ledger(ctx context.Context, runID string) ([]*store.LedgerEntry, error) {
	var exists bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM runs WHERE id = $1)", runID).Scan(&exists); err != nil {
		return nil, fmt.Errorf("read ledger of run %s: %w", runID, err)
	}
	if !exists {
		return nil, &store.NotFoundError{Kind: "run", ID: runID}
	}
	rows, err := s.pool.Query(ctx, "SELECT "+ledgerColumns+" FROM run_ledger WHERE run_id = $1 ORDER BY seq", runID)
	if err != nil {
		return nil, fmt.Errorf("read ledger of run %s: %w", runID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.LedgerEntry, error) { return scanLedger(row) })
	if err != nil {
		return nil, fmt.Errorf("read ledger of run %s: %w", runID, err)
	}
	if out == nil {
		out = []*store.LedgerEntry{}
	}
	return out, nil
}
