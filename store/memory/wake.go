package memory

import (
	"context"
	"time"

	"github.com/cairnhq/cairn/store"
)

// NextWake returns the earliest wake time of the waiting runs, or the
// zero time when none has one (as sqlite.Store.NextWake).
func (s *Store) NextWake(ctx context.Context) (time.Time, error) {
	var next time.Time
	err := s.read(func() error {
		for _, r := range s.runs.byID {
			if r.Status == store.RunWaiting && !r.WakeAt.IsZero() && (next.IsZero() || r.WakeAt.Before(next)) {
				next = r.WakeAt
			}
		}
		return nil
	})
	return next, err
}
