package memory

import (
	"context"
	"slices"

	"github.com/cairnhq/cairn/store"
)

// DeleteRuns deletes settled runs, store.DeleteBatch per operation.
func (s *Store) DeleteRuns(ctx context.Context, ids []string) (store.Deleted, error) {
	var out store.Deleted
	seen := make(map[string]bool, len(ids))
	for _, batch := range store.Chunks(ids, store.DeleteBatch) {
		err := s.write(store.WithOpID(ctx, ""), "run.delete", func() error {
			gone := make(map[string]bool)
			for _, id := range batch {
				if seen[id] {
					continue
				}
				seen[id] = true
				r, ok := s.runs.byID[id]
				switch {
				case !ok:
					out.Missing = append(out.Missing, id)
				case !r.Status.Settled():
					out.Active = append(out.Active, id)
				default:
					out.Deleted = append(out.Deleted, id)
					gone[id] = true
					delete(s.runs.byID, id)
					delete(s.runs.ledger, id)
					delete(s.runs.seq, id)
				}
			}
			s.autos.dropFiresOf(gone)
			return nil
		})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// dropFiresOf deletes the fire history rows that name runs in gone. The
// caller holds the store's lock.
func (d *automationsData) dropFiresOf(gone map[string]bool) {
	if len(gone) == 0 {
		return
	}
	for aid, fires := range d.fires {
		d.fires[aid] = slices.DeleteFunc(fires, func(f *store.AutomationFire) bool { return gone[f.RunID] })
	}
}
