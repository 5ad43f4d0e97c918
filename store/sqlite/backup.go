package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Backup writes a consistent copy of the database to dest with VACUUM
// INTO, while other connections and processes go on reading and writing.
// dest must not exist: a backup never overwrites a file. The copy is 0600.
func (s *Store) Backup(ctx context.Context, dest string) error {
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("back up to %s: %w (choose a new file name)", dest, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("back up to %s: %w", dest, err)
	}
	// VACUUM INTO cannot run inside a transaction (the writer's) nor on a
	// query-only connection, so it gets a connection of its own.
	ro := s.opts
	ro.ReadOnly = true
	db, err := sql.Open("sqlite", dsn(s.path, ro, false))
	if err != nil {
		return fmt.Errorf("back up %s: %w", s.path, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dest); err != nil {
		os.Remove(dest)
		return fmt.Errorf("back up %s to %s: %w", s.path, dest, err)
	}
	if err := os.Chmod(dest, 0o600); err != nil {
		return fmt.Errorf("back up to %s: %w", dest, err)
	}
	return nil
}
