package retention

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
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
	if c.opts.OutputDir == "" {
		return nil
	}
	entries, err := os.ReadDir(c.opts.OutputDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sweep journals: %w", err)
	}
	now := c.opts.Clock.Now()
	var old []string
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > orphanAge {
			old = append(old, id)
		}
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
