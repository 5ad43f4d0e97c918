package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/store"
)

var _ store.LeaseForgetter = (*Store)(nil)

func (s *Store) ForgetLeases(ctx context.Context, names []string) error {
	if len(names) > store.MaxListLimit {
		return fmt.Errorf("forget leases: %d names; at most %d", len(names), store.MaxListLimit)
	}
	return s.write(ctx, "lease.forget", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "DELETE FROM leases WHERE name = ANY($1) AND holder = ''", names); err != nil {
			return fmt.Errorf("forget leases: %w", err)
		}
		return nil
	})
}
