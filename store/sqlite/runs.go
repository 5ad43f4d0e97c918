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

const runColumns = "id, target, status, input, literals, trigger, session_id, result, error, revision, created_at, updated_at"

func (s *Store) CreateRun(ctx context.Context, r *store.Run) error {
	return s.write(ctx, "run.create", func(tx *sql.Tx) error { return insertRun(ctx, tx, r) })
}

// insertRun adds r inside tx, filling defaults (status, revision 1,
// timestamps). Other writes that must queue a run in the same transaction
// (an automation's fire) call it too.
func insertRun(ctx context.Context, tx *sql.Tx, r *store.Run) error {
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
	trig, err := json.Marshal(r.Trigger)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO runs ("+runColumns+") VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (id) DO NOTHING",
		r.ID, r.Target, r.Status, string(r.Input), string(r.Literals), string(trig), r.SessionID, nullJSON(r.Result), r.Error, r.Revision, r.CreatedAt.UnixMilli(), r.UpdatedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("insert run %s: %w", r.ID, err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT changes()").Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("create run %s: %w", r.ID, store.ErrExists)
	}
	return nil
}

func (s *Store) GetRun(ctx context.Context, id string) (*store.Run, error) {
	r, err := scanRun(s.r.QueryRowContext(ctx, "SELECT "+runColumns+" FROM runs WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "run", ID: id}
	}
	return r, err
}

// rowScanner is *sql.Row or *sql.Rows.
type rowScanner interface{ Scan(dest ...any) error }

func scanRun(row rowScanner) (*store.Run, error) {
	var (
		r                     store.Run
		input, trig, literals string
		result                sql.NullString
		created, updated      int64
	)
	if err := row.Scan(&r.ID, &r.Target, &r.Status, &input, &literals, &trig, &r.SessionID, &result, &r.Error, &r.Revision, &created, &updated); err != nil {
		return nil, err
	}
	r.Input = json.RawMessage(input)
	r.Literals = json.RawMessage(literals)
	if result.Valid {
		r.Result = json.RawMessage(result.String)
	}
	if err := json.Unmarshal([]byte(trig), &r.Trigger); err != nil {
		return nil, fmt.Errorf("decode trigger of run %s: %w", r.ID, err)
	}
	r.CreatedAt = time.UnixMilli(created).UTC()
	r.UpdatedAt = time.UnixMilli(updated).UTC()
	return &r, nil
}

// nullJSON stores an empty raw message as NULL.
func nullJSON(m json.RawMessage) any {
	if len(m) == 0 {
		return nil
	}
	return string(m)
}
