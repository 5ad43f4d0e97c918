package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
)

// orphanAge is how long a journal file must have been left unchanged
// before it can be taken for an orphan: a run's record is committed before
// its journal is written, so a young file may belong to a run still being
// created elsewhere.
const orphanAge = time.Hour

// sweepOrphans removes journal files whose run no longer exists: what a
// collection that stopped between deleting runs and their journals left.
// With dryRun it only counts them.
func (c *Collector) sweepOrphans(ctx context.Context, dryRun bool, rep *Report) error {
	if c.opts.Journals == nil {
		return nil
	}
	old, err := c.opts.Journals.StaleJournals(c.opts.Clock.Now().Add(-orphanAge))
	if err != nil {
		return fmt.Errorf("sweep journals: %w", err)
	}
	for _, batch := range store.Chunks(old, store.DeleteBatch) {
		claims, err := c.opts.Store.RunClaims(ctx, batch)
		if err != nil {
			return fmt.Errorf("sweep journals: %w", err)
		}
		exists := make(map[string]bool, len(claims))
		for _, cl := range claims {
			exists[cl.ID] = true
		}
		for _, id := range batch {
			if exists[id] {
				continue
			}
			rep.Orphans++
			if dryRun {
				continue
			}
			if err := c.removeJournal(id, rep); err != nil {
				return err
			}
		}
	}
	return nil
}
