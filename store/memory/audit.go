package memory

import (
	"context"
	"time"

	"github.com/cairnhq/cairn/store"
)

func (s *Store) AppendAudit(ctx context.Context, e *store.AuditEntry) error {
	e.At = store.Millis(store.At(e.At))
	return s.write(ctx, "audit.append", func() error {
		s.auditSeq++
		e.Seq = s.auditSeq
		c := *e
		s.audit = append(s.audit, &c)
		return nil
	})
}

func (s *Store) ListAudit(ctx context.Context, f store.AuditFilter) ([]*store.AuditEntry, error) {
	out := []*store.AuditEntry{}
	err := s.read(func() error {
		for _, e := range s.audit {
			if len(out) == f.AuditLimit() {
				break
			}
			if e.Seq > f.After && !e.At.Before(store.Millis(f.Since)) {
				c := *e
				out = append(out, &c)
			}
		}
		return nil
	})
	return out, err
}

func (s *Store) DeleteAuditBefore(ctx context.Context, before time.Time, limit int) (int64, error) {
	var n int64
	err := s.write(ctx, "audit.delete", func() error {
		kept := s.audit[:0]
		for _, e := range s.audit {
			if int(n) < limit && e.At.Before(before) {
				n++
				continue
			}
			kept = append(kept, e)
		}
		clear(s.audit[len(kept):])
		s.audit = kept
		return nil
	})
	return n, err
}
