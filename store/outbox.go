package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Notification is one row of the notification outbox: an event a person
// is told about (a run waiting for an answer, a failed run, a paused
// automation), sent once. Its ID is the event's id, so enqueueing the
// same event again is a no-op.
type Notification struct {
	ID        string          `json:"id"`      // the event id, e.g. "run.failed:<run id>"; the idempotency key
	Kind      string          `json:"kind"`    // e.g. "run.failed"
	Payload   json.RawMessage `json:"payload"` // the JSON document delivered
	CreatedAt time.Time       `json:"created_at"`
	Attempts  int             `json:"attempts"` // deliveries tried so far
	NextAt    time.Time       `json:"next_at"`  // earliest next attempt
	LastError string          `json:"last_error,omitempty"`
	// State is pending, sent or dropped (gave up after too many
	// attempts). Sent and dropped rows are kept a while, then pruned.
	State string `json:"state"`
}

// Notification states.
const (
	NotifyPending = "pending"
	NotifySent    = "sent"
	NotifyDropped = "dropped"
)

// MaxNotificationPayload bounds a notification's JSON document.
const MaxNotificationPayload = 64 << 10

// ClaimNotificationsParams take pending notifications for delivery.
type ClaimNotificationsParams struct {
	Claim string        // the claimer's token
	Now   time.Time     // due: NextAt <= Now; zero: the current time
	Lease time.Duration // the claim holds until Now+Lease (a crashed sender's rows come back)
	Limit int
}

// NotificationOutcome records one delivery attempt of a claimed
// notification.
type NotificationOutcome struct {
	ID    string
	Claim string
	Now   time.Time
	// Sent: delivered. Otherwise Error says why not, and the row is tried
	// again at NextAt, or dropped when Drop is set.
	Sent   bool
	Error  string
	NextAt time.Time
	Drop   bool
}

// OutboxStore is the notification outbox. Rows are enqueued with the
// event's own write where the event is a run's (SettleParams.Notify,
// ParkParams.Notify), so that a crash never loses or doubles one.
type OutboxStore interface {
	// EnqueueNotification adds n as pending, due at once; an existing row
	// with n.ID is left as it is (added false).
	EnqueueNotification(ctx context.Context, n *Notification) (added bool, err error)
	// ClaimNotifications claims up to p.Limit due pending notifications
	// that no live claim holds, oldest first, until p.Now+p.Lease.
	ClaimNotifications(ctx context.Context, p ClaimNotificationsParams) ([]*Notification, error)
	// RecordNotification records an attempt by the row's claimer; a row
	// claimed by someone else since (the lease ran out) gives an error
	// wrapping ErrNotOwner. It also prunes sent and dropped rows older
	// than NotificationKeep, a bounded batch at a time.
	RecordNotification(ctx context.Context, o NotificationOutcome) error
	// NextNotification is the earliest NextAt of the pending rows (ok
	// false when there is none); a read, for a sender to sleep until.
	NextNotification(ctx context.Context) (next time.Time, ok bool, err error)
	// Notifications lists up to limit rows, newest first.
	Notifications(ctx context.Context, limit int) ([]*Notification, error)
}

// NotificationKeep is how long sent and dropped notifications are kept.
const NotificationKeep = 7 * 24 * time.Hour

// PrepareNotification checks n and returns the row to store: pending,
// due at once, no attempts yet, created at n.CreatedAt, else now (else
// the current time). Every backend calls it.
func PrepareNotification(n *Notification, now time.Time) (*Notification, error) {
	if n == nil || n.ID == "" || len(n.ID) > 512 || n.Kind == "" {
		return nil, fmt.Errorf("enqueue notification: needs an id (at most 512 bytes) and a kind")
	}
	if len(n.Payload) > MaxNotificationPayload || !json.Valid(n.Payload) {
		return nil, fmt.Errorf("enqueue notification %s: the payload must be JSON of at most %d bytes", n.ID, MaxNotificationPayload)
	}
	if !n.CreatedAt.IsZero() {
		now = n.CreatedAt
	}
	now = Millis(At(now))
	return &Notification{ID: n.ID, Kind: n.Kind, Payload: append(json.RawMessage(nil), n.Payload...), CreatedAt: now, NextAt: now, State: NotifyPending}, nil
}

// ApplyNotificationOutcome is cur after attempt o (see
// OutboxStore.RecordNotification); claim and claimUntil are cur's.
func ApplyNotificationOutcome(cur *Notification, claim string, o NotificationOutcome) (*Notification, error) {
	if o.Claim == "" || claim != o.Claim || cur.State != NotifyPending {
		return nil, fmt.Errorf("notification %s: %w (its claim ran out and another sender took it)", cur.ID, ErrNotOwner)
	}
	n := *cur
	n.Attempts++
	switch {
	case o.Sent:
		n.State, n.LastError = NotifySent, ""
	case o.Drop:
		n.State, n.LastError = NotifyDropped, o.Error
	default:
		n.LastError, n.NextAt = o.Error, Millis(o.NextAt)
	}
	return &n, nil
}

// NotificationPruneBatch bounds the rows one RecordNotification prunes.
const NotificationPruneBatch = 100
