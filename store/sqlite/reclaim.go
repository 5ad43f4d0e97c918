package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
)

var _ store.SpaceReclaimer = (*Store)(nil)

// autoVacuumIncremental is PRAGMA auto_vacuum's value for INCREMENTAL.
const autoVacuumIncremental = 2

// ReclaimSpace gives the database's free pages back to the file system:
// PRAGMA incremental_vacuum when the database allows it (new databases do,
// see Open), else one VACUUM that rewrites it and switches it to
// incremental vacuum, so later calls are cheap. A WAL checkpoint then
// truncates the file.
//
// It uses a connection of its own: neither statement may run inside the
// writer's transaction. The writer's next transaction waits for it.
func (s *Store) ReclaimSpace(ctx context.Context) (store.Space, error) {
	var sp store.Space
	if s.opts.ReadOnly {
		return sp, fmt.Errorf("reclaim space: store %s is open read-only", s.path)
	}
	db, err := sql.Open("sqlite", dsn(s.path, s.opts, true))
	if err != nil {
		return sp, fmt.Errorf("reclaim space in %s: %w", s.path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var mode, free int64
	read := "SELECT (SELECT page_size FROM pragma_page_size), (SELECT page_count FROM pragma_page_count), (SELECT freelist_count FROM pragma_freelist_count), (SELECT auto_vacuum FROM pragma_auto_vacuum)"
	if err := db.QueryRowContext(ctx, read).Scan(&sp.PageSize, &sp.PagesBefore, &free, &mode); err != nil {
		return sp, fmt.Errorf("reclaim space in %s: %w", s.path, err)
	}
	sp.PagesAfter = sp.PagesBefore
	if free == 0 {
		return sp, nil
	}
	stmts := []string{"PRAGMA incremental_vacuum"}
	sp.Method = "incremental_vacuum"
	if mode != autoVacuumIncremental {
		stmts = []string{"PRAGMA auto_vacuum = INCREMENTAL", "VACUUM"}
		sp.Method = "vacuum"
	}
	stmts = append(stmts, "PRAGMA wal_checkpoint(TRUNCATE)")
	for _, q := range stmts {
		// incremental_vacuum and wal_checkpoint return rows: drain them.
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			return sp, fmt.Errorf("reclaim space in %s: %s: %w", s.path, q, err)
		}
		for rows.Next() {
		}
		if err := rows.Close(); err != nil {
			return sp, fmt.Errorf("reclaim space in %s: %s: %w", s.path, q, err)
		}
		if err := rows.Err(); err != nil {
			return sp, fmt.Errorf("reclaim space in %s: %s: %w", s.path, q, err)
		}
	}
	if err := db.QueryRowContext(ctx, "SELECT page_count FROM pragma_page_count").Scan(&sp.PagesAfter); err != nil {
		return sp, fmt.Errorf("reclaim space in %s: %w", s.path, err)
	}
	return sp, nil
}

// pruneBatch is how many operation ids the first slice forgets; later
// slices adapt (see slices.go).
const pruneBatch = 5000

var qPruneOperations = prepared("DELETE FROM operations WHERE id IN (SELECT id FROM operations WHERE at < ? LIMIT ?)")

// PruneOperations forgets operation ids older than before, in slices (see
// slices.go).
func (s *Store) PruneOperations(ctx context.Context, before time.Time) (int64, error) {
	var total, n int64
	err := s.sliced(ctx, "operations.prune", newSlicer(pruneBatch, 100, 50000), func(tx *sql.Tx, k int) (bool, error) {
		res, err := s.exec(ctx, tx, qPruneOperations, before.UnixMilli(), k)
		if err != nil {
			return false, err
		}
		n, err = res.RowsAffected()
		return n < int64(k), err
	}, func() { total += n })
	if err != nil {
		return total, fmt.Errorf("prune operations: %w", err)
	}
	return total, nil
}
