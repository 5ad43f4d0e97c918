package postgres

import (
	"context"
	"fmt"

	"github.com/cairnhq/cairn/store"
	"github.com/jackc/pgx/v5"
)

// Run change numbers (see run_changed in 0001_base.sql): a write logs
// its run's change in its own statement; the readers of changes number
// what they find committed.

// logChange prefixes a statement that writes run id (a parameter such
// as "$1") with the log of its change.
func logChange(id string) string {
	return "WITH changed AS (INSERT INTO run_changed (run_id) VALUES (" + id + ")) "
}

// defaultNumberBatch bounds the logged changes one numbering consumes
// (Store.numberBatch); the rest wait for the next reader.
const defaultNumberBatch = 10000

// qNumberChanges numbers the runs of the oldest logged changes this
// statement sees, all of them committed, from $1 on in write order: each
// run gets one number, for its latest change, with the revision it has
// now (runs deleted since get none), and every change logged for it that
// the statement sees is consumed.
const qNumberChanges = `WITH batch AS (SELECT DISTINCT run_id FROM (SELECT run_id FROM run_changed ORDER BY change_order LIMIT $2) AS b),
	done AS (DELETE FROM run_changed WHERE run_id IN (SELECT run_id FROM batch) RETURNING run_id, change_order),
	latest AS (SELECT run_id, max(change_order) AS o FROM done GROUP BY run_id),
	numbered AS (SELECT l.run_id, r.revision, $1 + row_number() OVER (ORDER BY l.o) AS seq FROM latest AS l JOIN runs AS r ON r.id = l.run_id)
	INSERT INTO run_seq (run_id, seq, revision) SELECT run_id, seq, revision FROM numbered
	ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, revision = excluded.revision`

// numberChanges numbers the logged changes under the lock of the counter
// row, so numberings by several hosts follow each other. A change whose
// write is not committed yet is not seen: it is numbered by a later
// numbering, higher than any given before.
func (s *Store) numberChanges(ctx context.Context) error {
	var pending bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM run_changed)").Scan(&pending); err != nil || !pending {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var last int64
		if err := tx.QueryRow(ctx, "SELECT last FROM run_changes FOR UPDATE").Scan(&last); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, qNumberChanges, last, s.numberBatch)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE run_changes SET last = $1", last+tag.RowsAffected())
		return err
	})
}

func (s *Store) ChangedRuns(ctx context.Context, after int64, limit int) ([]store.RunChange, error) {
	if limit <= 0 || limit > store.MaxListLimit {
		limit = store.MaxListLimit
	}
	if err := s.numberChanges(ctx); err != nil {
		return nil, fmt.Errorf("number run changes: %w", err)
	}
	rows, err := s.pool.Query(ctx, "SELECT run_id, revision, seq FROM run_seq WHERE seq > $1 ORDER BY seq LIMIT $2", after, limit)
	if err != nil {
		return nil, fmt.Errorf("list changed runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.RunChange, error) {
		var c store.RunChange
		err := row.Scan(&c.ID, &c.Revision, &c.Seq)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("list changed runs: %w", err)
	}
	return out, nil
}

func (s *Store) LastRunChange(ctx context.Context) (int64, error) {
	if err := s.numberChanges(ctx); err != nil {
		return 0, fmt.Errorf("number run changes: %w", err)
	}
	var n int64
	if err := s.pool.QueryRow(ctx, "SELECT last FROM run_changes").Scan(&n); err != nil {
		return 0, fmt.Errorf("read the last run change: %w", err)
	}
	return n, nil
}
