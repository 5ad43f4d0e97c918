package memory

import (
	"context"

	"github.com/cairnhq/cairn/store"
)

func (s *Store) TakeLease(ctx context.Context, p store.LeaseParams) (store.Lease, error) {
	var out store.Lease
	err := s.write(ctx, "lease.take", func() error {
		next, err := store.PlanLease(s.lease(p.Name), p)
		if err != nil {
			return err
		}
		s.putLease(next)
		out = next
		return nil
	})
	return out, err
}

func (s *Store) ReleaseLease(ctx context.Context, f store.LeaseFence) error {
	return s.write(ctx, "lease.release", func() error {
		if next, ok := store.PlanRelease(s.lease(f.Name), f); ok {
			s.putLease(next)
		}
		return nil
	})
}

func (s *Store) GetLease(ctx context.Context, name string) (store.Lease, error) {
	var out store.Lease
	err := s.read(func() error {
		l := s.lease(name)
		if l == nil {
			return &store.NotFoundError{Kind: "lease", ID: name}
		}
		out = *l
		return nil
	})
	return out, err
}

// lease returns the stored lease name, or nil; the caller holds s.mu.
func (s *Store) lease(name string) *store.Lease {
	l, ok := s.leases[name]
	if !ok {
		return nil
	}
	return &l
}

func (s *Store) putLease(l store.Lease) {
	if s.leases == nil {
		s.leases = map[string]store.Lease{}
	}
	s.leases[l.Name] = l
}

// checkFences refuses a write fenced by a lease holding that is no longer
// current; the caller holds s.mu.
func (s *Store) checkFences(fs ...*store.LeaseFence) error {
	for _, f := range fs {
		if f == nil {
			continue
		}
		if err := store.CheckFence(s.lease(f.Name), f); err != nil {
			return err
		}
	}
	return nil
}
