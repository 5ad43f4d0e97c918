package memory

import (
	"context"
	"fmt"

	"github.com/cairnhq/cairn/store"
)

var _ store.LeaseForgetter = (*Store)(nil)

func (s *Store) ForgetLeases(ctx context.Context, names []string) error {
	if len(names) > store.MaxListLimit {
		return fmt.Errorf("forget leases: %d names; at most %d", len(names), store.MaxListLimit)
	}
	return s.write(ctx, "lease.forget", func() error {
		for _, n := range names {
			if l, ok := s.leases[n]; ok && l.Holder == "" {
				delete(s.leases, n)
			}
		}
		return nil
	})
}
