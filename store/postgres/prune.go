package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
	"github.com/jackc/pgx/v5"
)

var _ store.OperationPruner = (*Store)(nil)

// pruneBatch bounds the operation ids one transaction of PruneOperations
// deletes.
const pruneBatch = 5000

// PruneOperations forgets operation ids older than before, pruneBatch at
// a time. Space is not reclaimed by hand: PostgreSQL's autovacuum makes
// the deleted rows' space reusable.
func (s *Store) PruneOperations(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for {
		var n int64
		err := s.write(store.WithOpID(ctx, ""), "operations.prune", func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, "DELETE FROM operations WHERE id IN (SELECT id FROM operations WHERE at < $1 LIMIT $2)", before, pruneBatch)
			n = tag.RowsAffected()
			return err
		})
		if err != nil {
			return total, fmt.Errorf("prune operations: %w", err)
		}
		total += n
		if n < pruneBatch {
			return total, nil
		}
	}
}
