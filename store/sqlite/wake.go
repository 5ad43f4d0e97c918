package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"time"

	"github.com/cairnhq/cairn/internal/wake"
)

// WatchCommits returns a channel that gets a value (coalesced) after a
// write to the database's files by any process: a commit appends to the
// WAL, a checkpoint writes the database file. Peers wait on it instead of
// polling the store; a value only says "look again". stop ends the watch.
// Where the OS cannot watch files the error wraps errors.ErrUnsupported.
func (s *Store) WatchCommits() (c <-chan struct{}, stop func(), err error) {
	d, err := wake.WatchDir(filepath.Dir(s.path))
	if err != nil {
		return nil, nil, fmt.Errorf("watch commits: %w", err)
	}
	sub := d.Subscribe(filepath.Base(s.path)) // the database, its -wal and -journal
	return sub.C(), func() { sub.Close(); d.Close() }, nil
}

var qNextWake = prepared("SELECT min(wake_at) FROM runs WHERE status = 'waiting' AND wake_at IS NOT NULL")

// NextWake returns the earliest wake time of the waiting runs (a durable
// sleep's end, an ask's timeout), or the zero time when none has one.
func (s *Store) NextWake(ctx context.Context) (time.Time, error) {
	var ms sql.NullInt64
	if err := s.queryRow(ctx, qNextWake).Scan(&ms); err != nil {
		return time.Time{}, fmt.Errorf("read the next wake time: %w", err)
	}
	if !ms.Valid {
		return time.Time{}, nil
	}
	return time.UnixMilli(ms.Int64).UTC(), nil
}
