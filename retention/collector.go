package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/store"
)

// Options configure a Collector.
type Options struct {
	Store  store.Store // required
	Policy Policy
	// Journals removes deleted runs' journals (a *runs.Engine, or
	// runs.JournalDir without an engine); nil: runs have no journals to
	// remove.
	Journals Journals
	Clock    clock.Clock  // nil: the wall clock
	Log      *slog.Logger // nil: discard
}

// Journals are the run journals a collection removes with their runs.
type Journals interface {
	// RemoveJournal deletes run id's journal and returns the bytes it
	// held (0 when it had none).
	RemoveJournal(id string) (int64, error)
	// StaleJournals lists the runs whose journal last changed before t.
	StaleJournals(before time.Time) ([]string, error)
}

// Collector deletes the runs its policy selects.
type Collector struct {
	opts Options
}

// NewCollector returns a collector; nothing runs until Collect.
func NewCollector(o Options) *Collector {
	o.Clock = clock.OrReal(o.Clock)
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Collector{opts: o}
}

// Report is what one collection found and did.
type Report struct {
	DryRun   bool `json:"dry_run,omitempty"`
	Examined int  `json:"examined"` // runs looked at
	// Deleted are the runs deleted (with a dry run: that would be).
	Deleted []string `json:"deleted"`
	// Journals counts the journal files removed and JournalBytes their size.
	Journals     int   `json:"journals"`
	JournalBytes int64 `json:"journal_bytes"`
	// Orphans counts journal files of runs that no longer exist, removed
	// with the others (see sweepOrphans).
	Orphans int `json:"orphan_journals,omitempty"`
	// Operations counts the write operation ids forgotten (older than
	// OperationsKept; see store.OperationPruner).
	Operations int64        `json:"operations_pruned,omitempty"`
	Audit      int64        `json:"audit_deleted,omitempty"` // audit entries older than MaxAge
	Space      *store.Space `json:"space,omitempty"`         // what the database gave back
}

// OperationsKept is how long the ids of committed write operations are
// kept: only the next open after a commit with an unknown outcome reads
// them.
const OperationsKept = 7 * 24 * time.Hour

// pageSize is how many runs one read of the pass brings.
const pageSize = store.MaxListLimit

// Collect makes one pass over every run, newest first, and deletes what
// the policy selects, a page at a time, with their journal files; then it
// removes journals left without a run, and the database gives its free
// space back. With dryRun it only reports.
func (c *Collector) Collect(ctx context.Context, dryRun bool) (Report, error) {
	rep := Report{DryRun: dryRun, Deleted: []string{}}
	sel := NewSelector(c.opts.Policy, c.opts.Clock.Now())
	cursor := ""
	for {
		page, next, err := c.opts.Store.ListRuns(ctx, store.RunFilter{Limit: pageSize, Cursor: cursor})
		if err != nil {
			return rep, fmt.Errorf("collect runs: %w", err)
		}
		var doomed []string
		for _, r := range page {
			if sel.Delete(r) {
				doomed = append(doomed, r.ID)
			}
		}
		rep.Examined += len(page)
		// The cursor is a position (creation time and id), so deleting
		// this page's runs does not move the next one.
		if dryRun {
			rep.Deleted = append(rep.Deleted, doomed...)
		} else if err := c.delete(ctx, doomed, &rep); err != nil {
			return rep, err
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if err := c.sweepOrphans(ctx, dryRun, &rep); err != nil {
		return rep, err
	}
	if err := c.collectAudit(ctx, dryRun, &rep); err != nil {
		return rep, err
	}
	if dryRun {
		return rep, nil
	}
	if op, ok := c.opts.Store.(store.OperationPruner); ok {
		pruned, err := op.PruneOperations(ctx, c.opts.Clock.Now().Add(-OperationsKept))
		rep.Operations = pruned
		if err != nil {
			return rep, err
		}
	}
	rc, ok := c.opts.Store.(store.SpaceReclaimer)
	if !ok {
		return rep, nil
	}
	if len(rep.Deleted) > 0 || rep.Operations > 0 || rep.Audit > 0 {
		sp, err := rc.ReclaimSpace(ctx)
		if err != nil {
			return rep, err
		}
		rep.Space = &sp
	}
	c.opts.Log.Info("retention: runs deleted", "runs", len(rep.Deleted), "journals", rep.Journals, "journal_bytes", rep.JournalBytes)
	return rep, nil
}

// Delete deletes the settled runs among ids by hand (runs delete), with
// their journal files, whatever the policy says.
func (c *Collector) Delete(ctx context.Context, ids []string) (store.Deleted, Report, error) {
	rep := Report{Deleted: []string{}}
	got, err := c.deleteRuns(ctx, ids, &rep)
	return got, rep, err
}

func (c *Collector) delete(ctx context.Context, ids []string, rep *Report) error {
	_, err := c.deleteRuns(ctx, ids, rep)
	return err
}

// deleteRuns deletes runs from the store first and their journals after:
// a crash in between leaves a journal without a run, never a run without
// its journal.
func (c *Collector) deleteRuns(ctx context.Context, ids []string, rep *Report) (store.Deleted, error) {
	if len(ids) == 0 {
		return store.Deleted{}, nil
	}
	got, err := c.opts.Store.DeleteRuns(ctx, ids)
	rep.Deleted = append(rep.Deleted, got.Deleted...)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, id := range got.Deleted {
		if err := c.removeJournal(id, rep); err != nil {
			errs = append(errs, err)
		}
	}
	return got, errors.Join(errs...)
}

func (c *Collector) removeJournal(id string, rep *Report) error {
	if c.opts.Journals == nil {
		return nil
	}
	n, err := c.opts.Journals.RemoveJournal(id)
	if err != nil {
		return err
	}
	if n > 0 {
		rep.Journals++
		rep.JournalBytes += n
	}
	return nil
}
