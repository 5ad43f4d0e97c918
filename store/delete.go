package store

import (
	"context"
	"slices"
	"time"
)

// DeleteBatch bounds how many runs one transaction of DeleteRuns deletes,
// so that a large gc never holds the write lock for long.
const DeleteBatch = 500

// Deleted is what DeleteRuns did with the ids it was given.
type Deleted struct {
	// Deleted runs are gone with their ledgers and the fire history rows
	// that name them.
	Deleted []string `json:"deleted"`
	// Active runs are not settled (queued, running or waiting): kept.
	Active []string `json:"active,omitempty"`
	// Missing ids name no run.
	Missing []string `json:"missing,omitempty"`
}

// Add files id as DeleteRuns treats a run of status st ("": no such run):
// deleted when settled, else active, or missing.
func (d *Deleted) Add(id string, st RunStatus) {
	switch {
	case st == "":
		d.Missing = append(d.Missing, id)
	case st.Settled():
		d.Deleted = append(d.Deleted, id)
	default:
		d.Active = append(d.Active, id)
	}
}

// Merge appends what o lists to d (the batches of one DeleteRuns).
func (d *Deleted) Merge(o Deleted) {
	d.Deleted = append(d.Deleted, o.Deleted...)
	d.Active = append(d.Active, o.Active...)
	d.Missing = append(d.Missing, o.Missing...)
}

// Space is what ReclaimSpace did, in database pages.
type Space struct {
	PageSize    int64 `json:"page_size"`
	PagesBefore int64 `json:"pages_before"`
	PagesAfter  int64 `json:"pages_after"`
	// Method is "incremental_vacuum", "vacuum" (a full rewrite, done once
	// to switch an older database to incremental vacuum) or "" (nothing
	// was free).
	Method string `json:"method,omitempty"`
}

// SpaceReclaimer is a store whose file keeps the space of deleted records
// until told to give it back (store/sqlite). Stores in memory have nothing
// to reclaim and do not implement it.
type SpaceReclaimer interface {
	// ReclaimSpace returns the free pages of the database to the file
	// system. Other connections and processes may go on reading and
	// writing meanwhile; their writes wait for it.
	ReclaimSpace(ctx context.Context) (Space, error)
	OperationPruner
}

// OperationPruner is a store that keeps the ids of its write operations
// (see Outcome) until told to forget old ones: store/sqlite,
// store/postgres.
type OperationPruner interface {
	// PruneOperations forgets the ids of write operations committed
	// before before (see Outcome), in bounded batches, and returns how
	// many it forgot. Only an operation whose outcome is unknown needs its
	// id, at the next open: keep a day or more.
	PruneOperations(ctx context.Context, before time.Time) (int64, error)
}

// Distinct returns ids without repeats, in their first order (what
// DeleteRuns reports on).
func Distinct(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool {
		dup := seen[id]
		seen[id] = true
		return dup
	})
}

// Chunks splits ids into slices of at most n (DeleteRuns' batches).
func Chunks(ids []string, n int) [][]string {
	var out [][]string
	for len(ids) > n {
		out = append(out, ids[:n:n])
		ids = ids[n:]
	}
	if len(ids) > 0 {
		out = append(out, ids)
	}
	return out
}
