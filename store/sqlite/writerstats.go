package sqlite

import (
	"sync/atomic"
	"time"
)

// WriterStats counts what the writer goroutine has done since Open: the
// cost of group commit, for benchmarks and diagnostics.
type WriterStats struct {
	Commits    int64         // transactions committed
	Operations int64         // write operations committed (several per commit)
	Busy       time.Duration // time spent running batches, commits (their fsync) included
}

// writerCounters are WriterStats, updated by the writer goroutine.
type writerCounters struct {
	commits, ops, busy atomic.Int64
}

// WriterStats returns the writer's counts so far; safe for concurrent use.
func (s *Store) WriterStats() WriterStats {
	return WriterStats{
		Commits:    s.counters.commits.Load(),
		Operations: s.counters.ops.Load(),
		Busy:       time.Duration(s.counters.busy.Load()),
	}
}

// committed counts a batch of applied operations that committed, which
// took since start.
func (c *writerCounters) committed(applied int, start time.Time) {
	c.commits.Add(1)
	c.ops.Add(int64(applied))
	c.busy.Add(int64(time.Since(start)))
}
