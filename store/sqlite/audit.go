package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
)

var (
	qInsertAudit = prepared("INSERT INTO audit (at, principal, connection, tool, args_digest, outcome, subject) VALUES (?,?,?,?,?,?,?)")
	qListAudit   = prepared("SELECT seq, at, principal, connection, tool, args_digest, outcome, subject FROM audit WHERE seq > ? AND at >= ? ORDER BY seq LIMIT ?")
	qDeleteAudit = prepared("DELETE FROM audit WHERE seq IN (SELECT seq FROM audit WHERE at < ? ORDER BY seq LIMIT ?)")
)

func (s *Store) AppendAudit(ctx context.Context, e *store.AuditEntry) error {
	e.At = store.Millis(store.At(e.At))
	return s.write(ctx, "audit.append", func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, qInsertAudit, e.At.UnixMilli(), e.Principal, e.Connection, e.Tool, e.ArgsDigest, e.Outcome, e.Subject)
		if err != nil {
			return fmt.Errorf("append audit entry: %w", err)
		}
		e.Seq, err = res.LastInsertId()
		return err
	})
}

func (s *Store) ListAudit(ctx context.Context, f store.AuditFilter) ([]*store.AuditEntry, error) {
	var since int64
	if !f.Since.IsZero() {
		since = f.Since.UnixMilli()
	}
	rows, err := s.query(ctx, qListAudit, f.After, since, f.AuditLimit())
	out, err := scanRows(rows, err, scanAudit, []*store.AuditEntry{})
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	return out, nil
}

func (s *Store) DeleteAuditBefore(ctx context.Context, before time.Time, limit int) (int64, error) {
	var n int64
	err := s.write(ctx, "audit.delete", func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, qDeleteAudit, before.UnixMilli(), limit)
		if err != nil {
			return fmt.Errorf("delete audit entries: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

func scanAudit(row rowScanner) (*store.AuditEntry, error) {
	var (
		e  store.AuditEntry
		at int64
	)
	if err := row.Scan(&e.Seq, &at, &e.Principal, &e.Connection, &e.Tool, &e.ArgsDigest, &e.Outcome, &e.Subject); err != nil {
		return nil, err
	}
	e.At = millisTime(at)
	return &e, nil
}
