package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/cairnhq/cairn/store"
)

// outboxRow is a notification with its claim.
type outboxRow struct {
	n          store.Notification
	claim      string
	claimUntil time.Time
	doneAt     time.Time
}

type outboxData struct {
	byID map[string]*outboxRow
}

func (o *outboxData) init() { o.byID = map[string]*outboxRow{} }

// plan checks ns and returns what enqueues them (skipping ids already
// taken). It runs under the store's lock.
func (o *outboxData) plan(ns []*store.Notification, now time.Time) (func(), error) {
	rows := make([]*store.Notification, 0, len(ns))
	for _, n := range ns {
		row, err := store.PrepareNotification(n, now)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return func() {
		for _, row := range rows {
			if _, ok := o.byID[row.ID]; !ok {
				o.byID[row.ID] = &outboxRow{n: *row}
			}
		}
	}, nil
}

func (s *Store) EnqueueNotification(ctx context.Context, n *store.Notification) (bool, error) {
	var added bool
	err := s.write(ctx, "notify.enqueue", func() error {
		enqueue, err := s.outbox.plan([]*store.Notification{n}, time.Time{})
		if err != nil {
			return err
		}
		_, taken := s.outbox.byID[n.ID] // n is valid: plan checked it
		enqueue()
		added = !taken
		return nil
	})
	return added, err
}

func (s *Store) ClaimNotifications(ctx context.Context, p store.ClaimNotificationsParams) ([]*store.Notification, error) {
	var out []*store.Notification
	err := s.write(ctx, "notify.claim", func() error {
		now := store.Millis(store.At(p.Now))
		var due []*outboxRow
		for _, r := range s.outbox.byID {
			if r.n.State == store.NotifyPending && !r.n.NextAt.After(now) && !r.claimUntil.After(now) {
				due = append(due, r)
			}
		}
		slices.SortFunc(due, func(a, b *outboxRow) int {
			return cmp.Or(a.n.NextAt.Compare(b.n.NextAt), cmp.Compare(a.n.ID, b.n.ID))
		})
		for _, r := range due[:min(len(due), max(p.Limit, 0))] {
			r.claim, r.claimUntil = p.Claim, store.Millis(now.Add(p.Lease))
			c := r.n
			out = append(out, &c)
		}
		return nil
	})
	return out, err
}

func (s *Store) RecordNotification(ctx context.Context, o store.NotificationOutcome) error {
	return s.write(ctx, "notify.record", func() error {
		r, ok := s.outbox.byID[o.ID]
		if !ok {
			return &store.NotFoundError{Kind: "notification", ID: o.ID}
		}
		next, err := store.ApplyNotificationOutcome(&r.n, r.claim, o)
		if err != nil {
			return err
		}
		now := store.Millis(store.At(o.Now))
		r.n, r.claim, r.claimUntil = *next, "", time.Time{}
		if next.State != store.NotifyPending {
			r.doneAt = now
		}
		pruned := 0
		for id, old := range s.outbox.byID {
			if pruned < store.NotificationPruneBatch && old.n.State != store.NotifyPending && old.doneAt.Before(now.Add(-store.NotificationKeep)) {
				delete(s.outbox.byID, id)
				pruned++
			}
		}
		return nil
	})
}

func (s *Store) Notifications(ctx context.Context, limit int) ([]*store.Notification, error) {
	var out []*store.Notification
	err := s.read(func() error {
		for _, r := range s.outbox.byID {
			c := r.n
			out = append(out, &c)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b *store.Notification) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	return out[:min(len(out), max(limit, 0))], err
}

func (s *Store) NextNotification(ctx context.Context) (time.Time, bool, error) {
	var next time.Time
	var ok bool
	err := s.read(func() error {
		for _, r := range s.outbox.byID {
			if r.n.State == store.NotifyPending && (!ok || r.n.NextAt.Before(next)) {
				next, ok = r.n.NextAt, true
			}
		}
		return nil
	})
	return next, ok, err
}
