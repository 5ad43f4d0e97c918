package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn/store"
)

var (
	qGetLease = prepared("SELECT name, holder, pid, epoch, flocked, since, renewed, expires FROM leases WHERE name = ?")
	qPutLease = prepared("INSERT INTO leases (name, holder, pid, epoch, flocked, since, renewed, expires) VALUES (?,?,?,?,?,?,?,?) " +
		"ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, pid = excluded.pid, epoch = excluded.epoch, flocked = excluded.flocked, " +
		"since = excluded.since, renewed = excluded.renewed, expires = excluded.expires")
)

func (s *Store) TakeLease(ctx context.Context, p store.LeaseParams) (store.Lease, error) {
	var out store.Lease
	err := s.write(ctx, "lease.take", func(tx *sql.Tx) error {
		cur, err := s.txLease(ctx, tx, p.Name)
		if err != nil {
			return err
		}
		next, err := store.PlanLease(cur, p)
		if err != nil {
			return err
		}
		out = next
		return s.putLease(ctx, tx, next)
	})
	if err != nil {
		return store.Lease{}, err
	}
	return out, nil
}

func (s *Store) ReleaseLease(ctx context.Context, f store.LeaseFence) error {
	return s.write(ctx, "lease.release", func(tx *sql.Tx) error {
		cur, err := s.txLease(ctx, tx, f.Name)
		if err != nil {
			return err
		}
		if next, ok := store.PlanRelease(cur, f); ok {
			return s.putLease(ctx, tx, next)
		}
		return nil
	})
}

func (s *Store) GetLease(ctx context.Context, name string) (store.Lease, error) {
	l, err := scanLease(s.queryRow(ctx, qGetLease, name))
	switch {
	case errors.Is(err, sql.ErrNoRows), err != nil && strings.Contains(err.Error(), "no such table: leases"):
		// A database read-only commands open unmigrated may predate leases.
		return store.Lease{}, &store.NotFoundError{Kind: "lease", ID: name}
	case err != nil:
		return store.Lease{}, fmt.Errorf("read lease %s: %w", name, err)
	}
	return l, nil
}

// txLease reads a lease inside tx; nil when it was never taken.
func (s *Store) txLease(ctx context.Context, tx *sql.Tx, name string) (*store.Lease, error) {
	l, err := scanLease(s.txQueryRow(ctx, tx, qGetLease, name))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read lease %s: %w", name, err)
	}
	return &l, nil
}

func (s *Store) putLease(ctx context.Context, tx *sql.Tx, l store.Lease) error {
	if _, err := s.exec(ctx, tx, qPutLease, l.Name, l.Holder, l.PID, l.Epoch, l.Flocked, l.Since.UnixMilli(), l.Renewed.UnixMilli(), l.Expires.UnixMilli()); err != nil {
		return fmt.Errorf("write lease %s: %w", l.Name, err)
	}
	return nil
}

// checkFences refuses, inside a write's transaction, a write fenced by a
// lease holding that is no longer current. The fences of one operation
// are nearly always one and the same: each distinct one is read once.
func (s *Store) checkFences(ctx context.Context, tx *sql.Tx, fs ...*store.LeaseFence) error {
	var checked []store.LeaseFence
	for _, f := range fs {
		if f == nil || slices.Contains(checked, *f) {
			continue
		}
		cur, err := s.txLease(ctx, tx, f.Name)
		if err != nil {
			return err
		}
		if err := store.CheckFence(cur, f); err != nil {
			return err
		}
		checked = append(checked, *f)
	}
	return nil
}

func scanLease(row *sql.Row) (store.Lease, error) {
	var l store.Lease
	var since, renewed, expires int64
	if err := row.Scan(&l.Name, &l.Holder, &l.PID, &l.Epoch, &l.Flocked, &since, &renewed, &expires); err != nil {
		return store.Lease{}, err
	}
	l.Since, l.Renewed, l.Expires = time.UnixMilli(since).UTC(), time.UnixMilli(renewed).UTC(), time.UnixMilli(expires).UTC()
	return l, nil
}
