package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/store"
)

// AppendAudit takes the workspace's audit lock (a transaction advisory
// lock, keyed by the schema) before it takes a sequence number, so that
// entries commit in seq order: a reader paging by seq (AuditFilter.After)
// never passes a number whose entry commits later.
func (s *Store) AppendAudit(ctx context.Context, e *store.AuditEntry) error {
	e.At = store.Millis(store.At(e.At))
	return s.write(ctx, "audit.append", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '.audit', 0))"); err != nil {
			return fmt.Errorf("append audit entry: %w", err)
		}
		err := tx.QueryRow(ctx, "INSERT INTO audit (at, principal, connection, tool, args_digest, outcome, subject) VALUES ($1,$2,$3,$4,$5,$6,$7) RETURNING seq",
			e.At, e.Principal, e.Connection, e.Tool, e.ArgsDigest, e.Outcome, e.Subject).Scan(&e.Seq)
		if err != nil {
			return fmt.Errorf("append audit entry: %w", err)
		}
		return nil
	})
}

func (s *Store) ListAudit(ctx context.Context, f store.AuditFilter) ([]*store.AuditEntry, error) {
	var since *time.Time // NULL: from the start
	if !f.Since.IsZero() {
		since = &f.Since
	}
	rows, err := s.pool.Query(ctx, "SELECT seq, at, principal, connection, tool, args_digest, outcome, subject FROM audit WHERE seq > $1 AND ($2::timestamptz IS NULL OR at >= $2) ORDER BY seq LIMIT $3",
		f.After, since, f.AuditLimit())
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	out, err := collect(rows, func(row pgx.Row) (*store.AuditEntry, error) {
		var e store.AuditEntry
		if err := row.Scan(&e.Seq, &e.At, &e.Principal, &e.Connection, &e.Tool, &e.ArgsDigest, &e.Outcome, &e.Subject); err != nil {
			return nil, err
		}
		e.At = e.At.UTC()
		return &e, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	return out, nil
}

func (s *Store) DeleteAuditBefore(ctx context.Context, before time.Time, limit int) (int64, error) {
	var n int64
	err := s.write(ctx, "audit.delete", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "DELETE FROM audit WHERE seq IN (SELECT seq FROM audit WHERE at < $1 ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED)", before, max(limit, 0))
		if err != nil {
			return fmt.Errorf("delete audit entries: %w", err)
		}
		n = tag.RowsAffected()
		return nil
	})
	return n, err
}
