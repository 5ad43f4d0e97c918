package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/cairnhq/cairn/store"
	"github.com/jackc/pgx/v5"
)

// DeleteRuns deletes settled runs, store.DeleteBatch per operation.
func (s *Store) DeleteRuns(ctx context.Context, ids []string) (store.Deleted, error) {
	var out store.Deleted
	for _, batch := range store.Chunks(uniq(ids), store.DeleteBatch) {
		var got store.Deleted
		err := s.write(store.WithOpID(ctx, ""), "run.delete", func(tx pgx.Tx) error {
			got = store.Deleted{}
			return s.deleteBatchTx(ctx, tx, batch, &got)
		})
		if err != nil {
			return out, fmt.Errorf("delete runs: %w", err)
		}
		out.Deleted = append(out.Deleted, got.Deleted...)
		out.Active = append(out.Active, got.Active...)
		out.Missing = append(out.Missing, got.Missing...)
	}
	return out, nil
}

// deleteBatchTx sorts batch into got and deletes its settled runs, their
// ledgers (ON DELETE CASCADE) and the fire history rows that name them.
// The runs are locked first, so none settles or changes meanwhile.
func (s *Store) deleteBatchTx(ctx context.Context, tx pgx.Tx, batch []string, got *store.Deleted) error {
	rows, err := tx.Query(ctx, "SELECT id, status FROM runs WHERE id = ANY($1) ORDER BY id FOR UPDATE", batch)
	if err != nil {
		return fmt.Errorf("read runs to delete: %w", err)
	}
	status := make(map[string]store.RunStatus, len(batch))
	for rows.Next() {
		var id string
		var st store.RunStatus
		if err := rows.Scan(&id, &st); err != nil {
			rows.Close()
			return fmt.Errorf("read runs to delete: %w", err)
		}
		status[id] = st
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read runs to delete: %w", err)
	}
	for _, id := range batch {
		switch st, ok := status[id]; {
		case !ok:
			got.Missing = append(got.Missing, id)
		case st.Settled():
			got.Deleted = append(got.Deleted, id)
		default:
			got.Active = append(got.Active, id)
		}
	}
	if len(got.Deleted) == 0 {
		return nil
	}
	if err := s.deleteFiresOfTx(ctx, tx, got.Deleted); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "DELETE FROM runs WHERE id = ANY($1)", got.Deleted); err != nil {
		return fmt.Errorf("delete runs: %w", err)
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
