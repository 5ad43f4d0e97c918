package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/store"
)

// lockFences refuses, inside a write's transaction, a write fenced by a
// lease holding that is no longer current (store.CheckFence). It reads
// each distinct lease FOR SHARE: a take or release of that lease (which
// updates its row) waits until the fenced write has committed, so the
// holding checked is still current when the write lands.
func lockFences(ctx context.Context, tx pgx.Tx, fs ...*store.LeaseFence) error {
	var checked []store.LeaseFence
	for _, f := range fs {
		if f == nil || slices.Contains(checked, *f) {
			continue
		}
		var (
			l   store.Lease
			cur *store.Lease
		)
		err := tx.QueryRow(ctx, "SELECT name, holder, pid, epoch, flocked, since, renewed, expires FROM leases WHERE name = $1 FOR SHARE", f.Name).
			Scan(&l.Name, &l.Holder, &l.PID, &l.Epoch, &l.Flocked, &l.Since, &l.Renewed, &l.Expires)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return fmt.Errorf("read lease %s: %w", f.Name, err)
		default:
			l.Since, l.Renewed, l.Expires = l.Since.UTC(), l.Renewed.UTC(), l.Expires.UTC()
			cur = &l
		}
		if err := store.CheckFence(cur, f); err != nil {
			return err
		}
		checked = append(checked, *f)
	}
	return nil
}
