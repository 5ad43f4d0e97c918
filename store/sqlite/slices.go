package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// Long operations (compacting a huge session, deleting its replaced
// messages, pruning an archive, gc) run as many small write operations,
// each sized so that its transaction holds the write lock for about
// sliceTarget: another process's write waits that long at most.

const sliceTarget = 50 * time.Millisecond

// sliceGap is the pause between two slices, in which a writer of another
// process (polling every few milliseconds, see begin) takes the lock.
const sliceGap = 5 * time.Millisecond

// slicer sizes the slices of one long operation by how long the last one
// took.
type slicer struct{ n, min, max int }

func newSlicer(first, lo, hi int) *slicer { return &slicer{n: first, min: lo, max: hi} }

// took adapts the next slice to the time the last one held the lock.
func (sl *slicer) took(d time.Duration) {
	switch {
	case d > sliceTarget:
		sl.n = max(sl.n/2, sl.min)
	case d < sliceTarget/2:
		sl.n = min(sl.n*2, sl.max)
	}
}

// sliced runs fn as write operations of kind, one slice each, until fn
// reports done. fn gets the slice size; committed, when not nil, is called
// after each slice that committed (what fn computed is valid only then).
func (s *Store) sliced(ctx context.Context, kind string, sl *slicer, fn func(tx *sql.Tx, n int) (done bool, err error), committed func()) error {
	for {
		var done bool
		start := time.Now()
		err := s.write(withNewOp(ctx), kind, func(tx *sql.Tx) error {
			var err error
			done, err = fn(tx, sl.n)
			return err
		})
		if err != nil {
			return err
		}
		if committed != nil {
			committed()
		}
		if done {
			return nil
		}
		sl.took(time.Since(start))
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(sliceGap)
	}
}

var (
	qCopySlice = prepared("INSERT INTO session_archive_messages (archive_n, " + messageColumns + ") SELECT ?, " + messageColumns +
		" FROM session_messages WHERE session_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?")
	qCopiedUpTo = prepared("SELECT coalesce(max(seq), ?) FROM session_archive_messages WHERE archive_n = ?")
	qDropHidden = prepared("DELETE FROM session_messages WHERE rowid IN (SELECT rowid FROM session_messages WHERE session_id = ? AND seq < (SELECT first_seq FROM sessions WHERE id = ?) ORDER BY seq LIMIT ?)")
	qAnyHidden  = prepared("SELECT EXISTS (SELECT 1 FROM session_messages WHERE session_id = ? AND seq < (SELECT first_seq FROM sessions WHERE id = ?))")
	qDropRows   = prepared("DELETE FROM session_archive_messages WHERE archive_n = ? AND seq IN (SELECT seq FROM session_archive_messages WHERE archive_n = ? ORDER BY seq LIMIT ?)")
)

// copySliced freezes the messages with from <= seq <= to of a session into
// archive n, a slice per operation. Messages are append-only and the
// session's compaction lock is held, so the range does not change.
func (s *Store) copySliced(ctx context.Context, sessionID string, n, from, to int64) error {
	last := from - 1
	return s.sliced(ctx, "session.compact.copy", newSlicer(1000, 200, 50000), func(tx *sql.Tx, k int) (bool, error) {
		res, err := s.exec(ctx, tx, qCopySlice, n, sessionID, last, to, k)
		if err != nil {
			return false, fmt.Errorf("archive messages of session %s: %w", sessionID, err)
		}
		copied, err := res.RowsAffected()
		if err != nil || copied < int64(k) {
			return true, err
		}
		if err := s.txQueryRow(ctx, tx, qCopiedUpTo, last, n).Scan(&last); err != nil {
			return false, fmt.Errorf("archive messages of session %s: %w", sessionID, err)
		}
		return false, nil
	}, nil)
}

// dropHidden deletes the messages a compaction replaced (below the
// session's first_seq; readers no longer see them), a slice per operation.
func (s *Store) dropHidden(ctx context.Context, sessionID string) error {
	var hidden int
	if err := s.queryRow(ctx, qAnyHidden, sessionID, sessionID).Scan(&hidden); err != nil {
		return fmt.Errorf("look for compacted messages of session %s: %w", sessionID, err)
	}
	if hidden == 0 {
		return nil
	}
	return s.sliced(ctx, "session.compact.drop", newSlicer(1000, 200, 50000), func(tx *sql.Tx, k int) (bool, error) {
		res, err := s.exec(ctx, tx, qDropHidden, sessionID, sessionID, k)
		if err != nil {
			return false, fmt.Errorf("delete compacted messages of session %s: %w", sessionID, err)
		}
		n, err := res.RowsAffected()
		return n < int64(k), err
	}, nil)
}

// dropArchiveRows deletes the message rows of archive n, a slice per
// operation; the archive is already hidden (in_rows = 2).
func (s *Store) dropArchiveRows(ctx context.Context, n int64) error {
	return s.sliced(ctx, "session.archive.prune", newSlicer(1000, 200, 50000), func(tx *sql.Tx, k int) (bool, error) {
		res, err := s.exec(ctx, tx, qDropRows, n, n, k)
		if err != nil {
			return false, fmt.Errorf("delete archived messages: %w", err)
		}
		got, err := res.RowsAffected()
		return got < int64(k), err
	}, nil)
}

// withNewOp gives each slice an operation id of its own.
func withNewOp(ctx context.Context) context.Context {
	return store.WithOpID(ctx, ids.New("op"))
}
