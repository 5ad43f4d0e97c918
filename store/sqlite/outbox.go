package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
)

const notificationCols = "id, kind, payload, created_at, attempts, next_at, last_error, state"

var (
	qEnqueueNotification = prepared("INSERT INTO notifications (id, kind, payload, created_at, next_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING")
	qClaimNotifications  = prepared("UPDATE notifications SET claim = ?, claim_until = ? WHERE id IN (SELECT id FROM notifications WHERE state = 'pending' AND next_at <= ? AND claim_until <= ? ORDER BY next_at, id LIMIT ?) RETURNING " + notificationCols)
	qNotificationClaim   = prepared("SELECT " + notificationCols + ", claim FROM notifications WHERE id = ?")
	qRecordNotification  = prepared("UPDATE notifications SET attempts = ?, next_at = ?, last_error = ?, state = ?, claim = '', claim_until = 0, done_at = ? WHERE id = ?")
	qPruneNotifications  = prepared("DELETE FROM notifications WHERE id IN (SELECT id FROM notifications WHERE state IN ('sent', 'dropped') AND done_at < ? LIMIT ?)")
	qNextNotification    = prepared("SELECT min(next_at) FROM notifications WHERE state = 'pending'")
	qListNotifications   = prepared("SELECT " + notificationCols + " FROM notifications ORDER BY created_at DESC, id DESC LIMIT ?")
)

// enqueueTx adds n to the outbox inside tx; errTaken when its id is.
func (s *Store) enqueueTx(ctx context.Context, tx *sql.Tx, n *store.Notification, now time.Time) error {
	row, err := store.PrepareNotification(n, now)
	if err != nil {
		return err
	}
	res, err := s.exec(ctx, tx, qEnqueueNotification, row.ID, row.Kind, string(row.Payload), row.CreatedAt.UnixMilli(), row.NextAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("enqueue notification %s: %w", row.ID, err)
	}
	if k, _ := res.RowsAffected(); k == 0 {
		return errTaken
	}
	return nil
}

// errTaken is enqueueTx's answer for an id already in the outbox; the
// callers inside a run transition ignore it.
var errTaken = errors.New("notification id taken")

// enqueueAllTx enqueues ns inside tx; ids already taken are skipped.
func (s *Store) enqueueAllTx(ctx context.Context, tx *sql.Tx, ns []*store.Notification, now time.Time) error {
	for _, n := range ns {
		if err := s.enqueueTx(ctx, tx, n, now); err != nil && !errors.Is(err, errTaken) {
			return err
		}
	}
	return nil
}

func (s *Store) EnqueueNotification(ctx context.Context, n *store.Notification) (bool, error) {
	added := true
	err := s.write(ctx, "notify.enqueue", func(tx *sql.Tx) error {
		err := s.enqueueTx(ctx, tx, n, time.Time{})
		if errors.Is(err, errTaken) {
			added = false
			return nil
		}
		return err
	})
	return added && err == nil, err
}

func scanNotification(row rowScanner, extra ...any) (*store.Notification, error) {
	var n store.Notification
	var payload string
	var created, next int64
	dest := append([]any{&n.ID, &n.Kind, &payload, &created, &n.Attempts, &next, &n.LastError, &n.State}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	n.Payload, n.CreatedAt, n.NextAt = []byte(payload), millisTime(created), millisTime(next)
	return &n, nil
}

func (s *Store) ClaimNotifications(ctx context.Context, p store.ClaimNotificationsParams) ([]*store.Notification, error) {
	var out []*store.Notification
	err := s.write(ctx, "notify.claim", func(tx *sql.Tx) error {
		now := store.Millis(store.At(p.Now))
		rows, err := s.txQuery(ctx, tx, qClaimNotifications, p.Claim, now.Add(p.Lease).UnixMilli(), now.UnixMilli(), now.UnixMilli(), max(p.Limit, 0))
		out, err = scanRows(rows, err, func(r rowScanner) (*store.Notification, error) { return scanNotification(r) }, out[:0])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim notifications: %w", err)
	}
	return out, nil
}

func (s *Store) RecordNotification(ctx context.Context, o store.NotificationOutcome) error {
	return s.write(ctx, "notify.record", func(tx *sql.Tx) error {
		var claim string
		cur, err := scanNotification(s.txQueryRow(ctx, tx, qNotificationClaim, o.ID), &claim)
		if errors.Is(err, sql.ErrNoRows) {
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
		var done int64
		if next.State != store.NotifyPending {
			done = now.UnixMilli()
		}
		if _, err := s.exec(ctx, tx, qRecordNotification, next.Attempts, next.NextAt.UnixMilli(), next.LastError, next.State, done, o.ID); err != nil {
			return fmt.Errorf("record notification %s: %w", o.ID, err)
		}
		if _, err := s.exec(ctx, tx, qPruneNotifications, now.Add(-store.NotificationKeep).UnixMilli(), store.NotificationPruneBatch); err != nil {
			return fmt.Errorf("prune notifications: %w", err)
		}
		return nil
	})
}

func (s *Store) Notifications(ctx context.Context, limit int) ([]*store.Notification, error) {
	rows, err := s.query(ctx, qListNotifications, max(limit, 0))
	return scanRows(rows, err, func(r rowScanner) (*store.Notification, error) { return scanNotification(r) }, nil)
}

func (s *Store) NextNotification(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullInt64
	if err := s.queryRow(ctx, qNextNotification).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("read the next notification: %w", err)
	}
	return millisTime(next.Int64), next.Valid, nil
}
