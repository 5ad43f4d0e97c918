package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
)

const ledgerColumns = "run_id, path, position, seq, kind, state, status, starts, detail, result, error, answer, owner_pid, started_at, finished_at"

func scanLedger(row rowScanner) (*store.LedgerEntry, error) {
	var (
		e                      store.LedgerEntry
		detail, result, answer sql.NullString
		started, finished      sql.NullInt64
	)
	if err := row.Scan(&e.RunID, &e.Path, &e.Position, &e.Seq, &e.Kind, &e.State, &e.Status, &e.Starts,
		&detail, &result, &e.Error, &answer, &e.OwnerPID, &started, &finished); err != nil {
		return nil, err
	}
	if detail.Valid {
		e.Detail = json.RawMessage(detail.String)
	}
	if result.Valid {
		e.Result = json.RawMessage(result.String)
	}
	if answer.Valid {
		a := answer.String
		e.Answer = &a
	}
	e.StartedAt, e.FinishedAt = timeOf(started), timeOf(finished)
	return &e, nil
}

var (
	qGetEntry  = prepared("SELECT " + ledgerColumns + " FROM run_ledger WHERE run_id = ? AND path = ? AND position = ?")
	qPutEntry  = prepared("INSERT OR REPLACE INTO run_ledger (" + ledgerColumns + ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
	qNextSeq   = prepared("SELECT coalesce(max(seq), 0) + 1 FROM run_ledger WHERE run_id = ?")
	qRunExists = prepared("SELECT 1 FROM runs WHERE id = ?")
	qLedger    = prepared("SELECT " + ledgerColumns + " FROM run_ledger WHERE run_id = ? ORDER BY seq")
)

func (s *Store) getEntryTx(ctx context.Context, tx *sql.Tx, runID, path string, pos int) (*store.LedgerEntry, error) {
	e, err := scanLedger(s.txQueryRow(ctx, tx, qGetEntry, runID, path, pos))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return e, err
}

// putEntryTx inserts or replaces a ledger entry.
func (s *Store) putEntryTx(ctx context.Context, tx *sql.Tx, e *store.LedgerEntry) error {
	var answer any
	if e.Answer != nil {
		answer = *e.Answer
	}
	_, err := s.exec(ctx, tx, qPutEntry,
		e.RunID, e.Path, e.Position, e.Seq, e.Kind, e.State, e.Status, e.Starts, nullJSON(e.Detail), nullJSON(e.Result),
		e.Error, answer, e.OwnerPID, nullTime(e.StartedAt), nullTime(e.FinishedAt))
	if err != nil {
		return fmt.Errorf("record step %s of run %s: %w", e.Path, e.RunID, err)
	}
	return nil
}

func (s *Store) nextSeqTx(ctx context.Context, tx *sql.Tx, runID string) (int64, error) {
	var n int64
	err := s.txQueryRow(ctx, tx, qNextSeq, runID).Scan(&n)
	return n, err
}

// stepWrite runs a ledger change for the owner (claim) of a running run,
// at now, and bumps the run's revision: apply returns the entry, and
// whether it stored it already (else stepWrite stores it).
func (s *Store) stepWrite(ctx context.Context, kind, runID, claim string, now time.Time, apply func(tx *sql.Tx) (*store.LedgerEntry, bool, error)) (*store.LedgerEntry, error) {
	var out *store.LedgerEntry
	_, err := s.runWrite(ctx, kind, runID, readOwned, func(tx *sql.Tx, cur *store.Run) (*store.Run, error) {
		r, err := store.ApplyStep(cur, claim, now)
		if err != nil {
			return nil, err
		}
		e, stored, err := apply(tx)
		if err != nil {
			return nil, err
		}
		out = e
		if stored {
			return r, nil
		}
		if e.Seq == 0 {
			if e.Seq, err = s.nextSeqTx(ctx, tx, runID); err != nil {
				return nil, err
			}
		}
		return r, s.putEntryTx(ctx, tx, e)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// qInsertStart stores the start of a call that has no entry yet, numbered
// next in its run's ledger, and returns its number; nothing when the
// call has an entry.
var qInsertStart = prepared("INSERT INTO run_ledger (" + ledgerColumns + ") VALUES (?,?,?,(SELECT coalesce(max(seq), 0) + 1 FROM run_ledger WHERE run_id = ?),?,?,?,?,?,?,?,?,?,?,?) " +
	"ON CONFLICT (run_id, path, position) DO NOTHING RETURNING seq")

// insertStartTx stores e, the start of a call never started (Seq 0), in
// one statement, as most starts are; inserted is false when the call has
// an entry already (nothing written).
func (s *Store) insertStartTx(ctx context.Context, tx *sql.Tx, e *store.LedgerEntry) (inserted bool, err error) {
	err = s.txQueryRow(ctx, tx, qInsertStart,
		e.RunID, e.Path, e.Position, e.RunID, e.Kind, e.State, e.Status, e.Starts, nullJSON(e.Detail), nullJSON(e.Result),
		e.Error, nil, e.OwnerPID, nullTime(e.StartedAt), nullTime(e.FinishedAt)).Scan(&e.Seq)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("record step %s of run %s: %w", e.Path, e.RunID, err)
	}
	return true, nil
}

func (s *Store) StartStep(ctx context.Context, p store.StepStart) (*store.LedgerEntry, error) {
	if err := store.CheckCall(p.RunID, p.Path, p.Position); err != nil {
		return nil, err
	}
	return s.stepWrite(ctx, "run.step.start", p.RunID, p.Claim, p.Now, func(tx *sql.Tx) (*store.LedgerEntry, bool, error) {
		if err := s.recordAllTx(ctx, tx, store.WriteLedger(p.RunID, p.Claim, p.Now, p.Ledger)); err != nil {
			return nil, false, err
		}
		// A first start (most are) is one statement; a call that has an
		// entry goes by the rule applied to it.
		fresh, err := store.ApplyStepStart(nil, p)
		if err != nil {
			return nil, false, err
		}
		if inserted, err := s.insertStartTx(ctx, tx, fresh); err != nil || inserted {
			return fresh, inserted, err
		}
		e, err := s.getEntryTx(ctx, tx, p.RunID, p.Path, p.Position)
		if err != nil {
			return nil, false, err
		}
		e, err = store.ApplyStepStart(e, p)
		return e, false, err
	})
}

func (s *Store) FinishStep(ctx context.Context, p store.StepFinish) (*store.LedgerEntry, error) {
	if err := store.CheckCall(p.RunID, p.Path, p.Position); err != nil {
		return nil, err
	}
	return s.stepWrite(ctx, "run.step.finish", p.RunID, p.Claim, p.Now, func(tx *sql.Tx) (*store.LedgerEntry, bool, error) {
		e, err := s.getEntryTx(ctx, tx, p.RunID, p.Path, p.Position)
		if err != nil {
			return nil, false, err
		}
		e, err = store.ApplyStepFinish(e, p)
		return e, false, err
	})
}

// qRecordOutcome records a call's outcome: a new entry for a call never
// started, or the finish of a started one; nothing for a finished one.
var qRecordOutcome = prepared(`INSERT INTO run_ledger (run_id, path, position, seq, kind, state, status, starts, result, error, owner_pid, finished_at)
	VALUES (?, ?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM run_ledger WHERE run_id = ?), ?, 'finished', ?, 0, ?, ?, 0, ?)
	ON CONFLICT (run_id, path, position) DO UPDATE SET kind = CASE WHEN kind = '' THEN excluded.kind ELSE kind END, state = 'finished',
	status = excluded.status, result = excluded.result, error = excluded.error, finished_at = excluded.finished_at WHERE state = 'started'`)

// recordTx records a call's outcome in tx in one statement, without
// reading the entry: the rule of store.ApplyStepFinish (a new entry for a
// call never started, the finish of a started one, a finished one
// refused) in SQL, since an owner records many outcomes this way.
func (s *Store) recordTx(ctx context.Context, tx *sql.Tx, p store.StepFinish) error {
	if err := store.CheckCall(p.RunID, p.Path, p.Position); err != nil {
		return err
	}
	now := store.Millis(store.At(p.Now)).UnixMilli()
	res, err := s.exec(ctx, tx, qRecordOutcome, p.RunID, p.Path, p.Position, p.RunID, p.Kind, p.Status, nullJSON(p.Result), p.Error, now)
	if err != nil {
		return fmt.Errorf("record step %s of run %s: %w", p.Path, p.RunID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	return store.FinishedError(p)
}

// recordAllTx records the outcomes fs in order (see recordTx).
func (s *Store) recordAllTx(ctx context.Context, tx *sql.Tx, fs []store.StepFinish) error {
	for _, f := range fs {
		if err := s.recordTx(ctx, tx, f); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) Ledger(ctx context.Context, runID string) ([]*store.LedgerEntry, error) {
	var one int
	if err := s.queryRow(ctx, qRunExists, runID).Scan(&one); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, &store.NotFoundError{Kind: "run", ID: runID}
		}
		return nil, fmt.Errorf("read ledger of run %s: %w", runID, err)
	}
	rows, err := s.query(ctx, qLedger, runID)
	out, err := scanRows(rows, err, scanLedger, []*store.LedgerEntry{})
	if err != nil {
		return nil, fmt.Errorf("read ledger of run %s: %w", runID, err)
	}
	return out, nil
}
