package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cairnhq/cairn/store"
)

var (
	qDeleteStatus = prepared("SELECT j.value, coalesce(r.status, '') FROM json_each(?) AS j LEFT JOIN runs AS r ON r.id = j.value")
	qDeleteFires  = prepared("DELETE FROM automation_fires WHERE run_id IN (SELECT value FROM json_each(?))")
	qDeleteLedger = prepared("DELETE FROM run_ledger WHERE run_id IN (SELECT value FROM json_each(?))")
	qDeleteRuns   = prepared("DELETE FROM runs WHERE id IN (SELECT value FROM json_each(?)) AND status IN ('succeeded', 'failed', 'cancelled')")
)

// DeleteRuns deletes settled runs in slices of at most store.DeleteBatch,
// sized so that each transaction holds the write lock briefly (see
// slices.go).
func (s *Store) DeleteRuns(ctx context.Context, runIDs []string) (store.Deleted, error) {
	var out store.Deleted
	rest := uniq(runIDs)
	if len(rest) == 0 {
		return out, nil
	}
	var (
		got   store.Deleted
		taken int
	)
	err := s.sliced(ctx, "run.delete", newSlicer(250, 100, store.DeleteBatch), func(tx *sql.Tx, k int) (bool, error) {
		batch := rest[:min(k, len(rest))]
		got, taken = store.Deleted{}, len(batch)
		err := s.deleteBatch(ctx, tx, batch, &got)
		return taken == len(rest), err
	}, func() {
		out.Deleted = append(out.Deleted, got.Deleted...)
		out.Active = append(out.Active, got.Active...)
		out.Missing = append(out.Missing, got.Missing...)
		rest = rest[taken:]
	})
	if err != nil {
		return out, fmt.Errorf("delete runs: %w", err)
	}
	return out, nil
}

func (s *Store) deleteBatch(ctx context.Context, tx *sql.Tx, batch []string, got *store.Deleted) error {
	list, err := json.Marshal(batch)
	if err != nil {
		return err
	}
	rows, err := s.txQuery(ctx, tx, qDeleteStatus, string(list))
	if err != nil {
		return fmt.Errorf("read runs to delete: %w", err)
	}
	for rows.Next() {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			rows.Close()
			return err
		}
		switch {
		case status == "":
			got.Missing = append(got.Missing, id)
		case store.RunStatus(status).Settled():
			got.Deleted = append(got.Deleted, id)
		default:
			got.Active = append(got.Active, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(got.Deleted) == 0 {
		return nil
	}
	if list, err = json.Marshal(got.Deleted); err != nil {
		return err
	}
	for _, q := range []string{qDeleteFires, qDeleteLedger, qDeleteRuns} {
		if _, err := s.exec(ctx, tx, q, string(list)); err != nil {
			return fmt.Errorf("delete runs: %w", err)
		}
	}
	return nil
}

// uniq returns ids without repeats, in their first order.
func uniq(list []string) []string {
	seen := make(map[string]bool, len(list))
	return slices.DeleteFunc(slices.Clone(list), func(id string) bool {
		dup := seen[id]
		seen[id] = true
		return dup
	})
}
