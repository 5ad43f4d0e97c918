package retention

import (
	"context"
	"fmt"
)

// auditBatch bounds the audit entries one transaction deletes.
const auditBatch = 1000

// collectAudit deletes audit entries older than the policy's MaxAge, in
// bounded batches: the audit trail is kept as long as runs are.
func (c *Collector) collectAudit(ctx context.Context, dryRun bool, rep *Report) error {
	if dryRun || c.opts.Policy.MaxAge <= 0 {
		return nil
	}
	before := c.opts.Clock.Now().Add(-c.opts.Policy.MaxAge)
	for {
		n, err := c.opts.Store.DeleteAuditBefore(ctx, before, auditBatch)
		rep.Audit += n
		if err != nil {
			return fmt.Errorf("collect audit entries: %w", err)
		}
		if n < auditBatch {
			return nil
		}
	}
}
