package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/store"
)

const notificationColumns = "id, kind, payload, created_at, attempts, next_at, last_error, state"

// errTaken is enqueueTx's answer for an id already in the outbox; the
// callers inside another write ignore it.
var errTaken = errors.New("notification id taken")

// enqueueTx adds n to the outbox inside tx; errTaken when its id is.
func enqueueTx(ctx context.Context, tx pgx.Tx, n *store.Notification, now time.Time) error {
	row, err := store.PrepareNotification(n, now)
	if err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, "INSERT INTO notifications (id, kind, payload, created_at, next_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING",
		row.ID, row.Kind, string(row.Payload), row.CreatedAt, row.NextAt)
	if err != nil {
		return fmt.Errorf("enqueue notification %s: %w", row.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return errTaken
	}
	return nil
}

// enqueueAllTx enqueues ns inside tx; ids already taken are skipped.
func (s *Store) enqueueAllTx(ctx context.Context, tx pgx.Tx, ns []*store.Notification, now time.Time) error {
	for _, n := range ns {
		if err := enqueueTx(ctx, tx, n, now); err != nil && !errors.Is(err, errTaken) {
			return err
		}
	}
	return nil
}

func (s *Store) EnqueueNotification(ctx context.Context, n *store.Notification) (bool, error) {
	added := true
	err := s.write(ctx, "notify.enqueue", func(tx pgx.Tx) error {
		added = true
		err := enqueueTx(ctx, tx, n, time.Time{})
		if errors.Is(err, errTaken) {
			added = false
			return nil
		}
		return err
	})
	return added && err == nil, err
}

// ClaimNotifications takes the due rows no live claim holds; rows another
// sender is claiming at this instant are skipped (SKIP LOCKED), not
// waited for.
func (s *Store) ClaimNotifications(ctx context.Context, p store.ClaimNotificationsParams) ([]*store.Notification, error) {
	var out []*store.Notification
	err := s.write(ctx, "notify.claim", func(tx pgx.Tx) error {
		now := store.Millis(store.At(p.Now))
		rows, err := tx.Query(ctx, "UPDATE notifications SET claim = $1, claim_until = $2 WHERE id IN "+
			"(SELECT id FROM notifications WHERE state = 'pending' AND next_at <= $3 AND claim_until <= $3 ORDER BY next_at, id LIMIT $4 FOR UPDATE SKIP LOCKED) "+
			"RETURNING "+notificationColumns, p.Claim, now.Add(p.Lease), now, max(p.Limit, 0))
		if err != nil {
			return err
		}
		out, err = collect(rows, func(r pgx.Row) (*store.Notification, error) { return scanNotification(r) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim notifications: %w", err)
	}
	// RETURNING keeps no order: oldest first, as claimed.
	slices.SortFunc(out, func(a, b *store.Notification) int {
		return cmp.Or(a.NextAt.Compare(b.NextAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

func (s *Store) RecordNotification(ctx context.Context, o store.NotificationOutcome) error {
	return s.write(ctx, "notify.record", func(tx pgx.Tx) error {
		var claim string
		cur, err := scanNotification(tx.QueryRow(ctx, "SELECT "+notificationColumns+", claim FROM notifications WHERE id = $1 FOR UPDATE", o.ID), &claim)
		if errors.Is(err, pgx.ErrNoRows) {
			return &store.NotFoundError{Kind: "notification", ID: o.ID}
		}
		if err != nil {
			return fmt.Errorf("read notification %s: %w", o.ID, err)
		}
		next, err := store.ApplyNotificationOutcome(cur, claim, o)
		if err != nil {
			return err
		}
		now := store.Millis(store.At(o.Now))
		var done *time.Time
		if next.State != store.NotifyPending {
			done = &now
		}
		if _, err := tx.Exec(ctx, "UPDATE notifications SET attempts = $2, next_at = $3, last_error = $4, state = $5, claim = '', claim_until = 'epoch', done_at = $6 WHERE id = $1",
			o.ID, next.Attempts, next.NextAt, next.LastError, next.State, done); err != nil {
			return fmt.Errorf("record notification %s: %w", o.ID, err)
		}
		if _, err := tx.Exec(ctx, "DELETE FROM notifications WHERE id IN (SELECT id FROM notifications WHERE state IN ('sent', 'dropped') AND done_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)",
			now.Add(-store.NotificationKeep), store.NotificationPruneBatch); err != nil {
			return fmt.Errorf("prune notifications: %w", err)
		}
		return nil
	})
}

func (s *Store) Notifications(ctx context.Context, limit int) ([]*store.Notification, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+notificationColumns+" FROM notifications ORDER BY created_at DESC, id DESC LIMIT $1", max(limit, 0))
	if err != nil {
		return nil, fmt.Errorf("list notifications: %w", err)
	}
	out, err := collect(rows, func(r pgx.Row) (*store.Notification, error) { return scanNotification(r) })
	if err != nil {
		return nil, fmt.Errorf("list notifications: %w", err)
	}
	return out, nil
}

func (s *Store) NextNotification(ctx context.Context) (time.Time, bool, error) {
	var next *time.Time
	if err := s.pool.QueryRow(ctx, "SELECT min(next_at) FROM notifications WHERE state = 'pending'").Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("read the next notification: %w", err)
	}
	if next == nil {
		return time.Time{}, false, nil
	}
	return next.UTC(), true, nil
}

// scanNotification reads notificationColumns, then extra.
func scanNotification(row pgx.Row, extra ...any) (*store.Notification, error) {
	var (
		n       store.Notification
		payload string
	)
	dest := append([]any{&n.ID, &n.Kind, &payload, &n.CreatedAt, &n.Attempts, &n.NextAt, &n.LastError, &n.State}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	n.Payload, n.CreatedAt, n.NextAt = []byte(payload), n.CreatedAt.UTC(), n.NextAt.UTC()
	return &n, nil
}
