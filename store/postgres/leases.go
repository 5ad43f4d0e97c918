package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cairnhq/cairn/store"
	"github.com/jackc/pgx/v5"
)

const leaseColumns = "name, holder, pid, epoch, flocked, since, renewed, expires"

func (s *Store) TakeLease(ctx context.Context, p store.LeaseParams) (store.Lease, error) {
	var out store.Lease
	err := s.write(ctx, "lease.take", func(tx pgx.Tx) error {
		// A lease never taken has no row to lock: takes of one name wait
		// for each other on an advisory lock instead, so that two first
		// takes cannot both win.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "cairn.lease:"+s.schema+":"+p.Name); err != nil {
			return fmt.Errorf("lock lease %s: %w", p.Name, err)
		}
		cur, err := leaseTx(ctx, tx, p.Name, "FOR UPDATE")
		if err != nil {
			return err
		}
		next, err := store.PlanLease(cur, p)
		if err != nil {
			return err
		}
		out = next
		return putLeaseTx(ctx, tx, next)
	})
	if err != nil {
		return store.Lease{}, err
	}
	return out, nil
}

func (s *Store) ReleaseLease(ctx context.Context, f store.LeaseFence) error {
	return s.write(ctx, "lease.release", func(tx pgx.Tx) error {
		cur, err := leaseTx(ctx, tx, f.Name, "FOR UPDATE")
		if err != nil {
			return err
		}
		if next, ok := store.PlanRelease(cur, f); ok {
			return putLeaseTx(ctx, tx, next)
		}
		return nil
	})
}

func (s *Store) GetLease(ctx context.Context, name string) (store.Lease, error) {
	l, err := scanLease(s.pool.QueryRow(ctx, "SELECT "+leaseColumns+" FROM leases WHERE name = $1", name))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.Lease{}, &store.NotFoundError{Kind: "lease", ID: name}
	case err != nil:
		return store.Lease{}, fmt.Errorf("read lease %s: %w", name, err)
	}
	return l, nil
}

// leaseTx reads a lease inside tx with the row lock lock; nil when it was
// never taken.
func leaseTx(ctx context.Context, tx pgx.Tx, name, lock string) (*store.Lease, error) {
	l, err := scanLease(tx.QueryRow(ctx, "SELECT "+leaseColumns+" FROM leases WHERE name = $1 "+lock, name))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read lease %s: %w", name, err)
	}
	return &l, nil
}

func putLeaseTx(ctx context.Context, tx pgx.Tx, l store.Lease) error {
	_, err := tx.Exec(ctx, "INSERT INTO leases ("+leaseColumns+") VALUES ($1,$2,$3,$4,$5,$6,$7,$8) "+
		"ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, pid = excluded.pid, epoch = excluded.epoch, "+
		"flocked = excluded.flocked, since = excluded.since, renewed = excluded.renewed, expires = excluded.expires",
		l.Name, l.Holder, l.PID, l.Epoch, l.Flocked, l.Since, l.Renewed, l.Expires)
	if err != nil {
		return fmt.Errorf("write lease %s: %w", l.Name, err)
	}
	return nil
}

// checkFencesTx refuses, inside a write's transaction, a write fenced by
// a lease holding that is no longer current. It reads each lease FOR
// SHARE: a take-over waits until the fenced write commits, so it can
// never slip in between the check and the commit.
func checkFencesTx(ctx context.Context, tx pgx.Tx, fs ...*store.LeaseFence) error {
	var checked []store.LeaseFence
	for _, f := range fs {
		if f == nil || slices.Contains(checked, *f) {
			continue
		}
		cur, err := leaseTx(ctx, tx, f.Name, "FOR SHARE")
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

func scanLease(row pgx.Row) (store.Lease, error) {
	var l store.Lease
	var since, renewed, expires time.Time
	if err := row.Scan(&l.Name, &l.Holder, &l.PID, &l.Epoch, &l.Flocked, &since, &renewed, &expires); err != nil {
		return store.Lease{}, err
	}
	l.Since, l.Renewed, l.Expires = since.UTC(), renewed.UTC(), expires.UTC()
	return l, nil
}
