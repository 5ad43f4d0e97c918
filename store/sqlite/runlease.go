package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cairnhq/cairn/store"
)

var _ store.LeaseForgetter = (*Store)(nil)

var qForgetLease = prepared("DELETE FROM leases WHERE name = ? AND holder = ''")

func (s *Store) ForgetLeases(ctx context.Context, names []string) error {
	if len(names) > store.MaxListLimit {
		return fmt.Errorf("forget leases: %d names; at most %d", len(names), store.MaxListLimit)
	}
	return s.write(ctx, "lease.forget", func(tx *sql.Tx) error {
		for _, n := range names {
			if _, err := s.exec(ctx, tx, qForgetLease, n); err != nil {
				return fmt.Errorf("forget lease %s: %w", n, err)
			}
		}
		return nil
	})
}
