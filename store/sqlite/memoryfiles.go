package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/store"
)

var _ store.MemoryFileStore = (*Store)(nil)

var (
	qPutMemoryFile    = prepared("INSERT INTO memory_files (session_id, archive_id, body) VALUES (?, ?, ?) ON CONFLICT (session_id, archive_id) DO UPDATE SET body = excluded.body")
	qGetMemoryFile    = prepared("SELECT body FROM memory_files WHERE session_id = ? AND archive_id = ?")
	qPruneMemoryFiles = prepared("DELETE FROM memory_files WHERE session_id = ? AND archive_id <> ?")
)

func (s *Store) PutMemoryFile(ctx context.Context, sessionID, archiveID, body string) error {
	if err := store.CheckMemoryFile(sessionID, archiveID); err != nil {
		return err
	}
	return s.write(ctx, "memory.put", func(tx *sql.Tx) error {
		if _, err := s.exec(ctx, tx, qPutMemoryFile, sessionID, archiveID, body); err != nil {
			return fmt.Errorf("store memory file of session %s: %w", sessionID, err)
		}
		return nil
	})
}

func (s *Store) GetMemoryFile(ctx context.Context, sessionID, archiveID string) (string, error) {
	var body string
	err := s.queryRow(ctx, qGetMemoryFile, sessionID, archiveID).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return "", &store.NotFoundError{Kind: "memory file", ID: sessionID + "/" + archiveID}
	}
	if err != nil {
		return "", fmt.Errorf("read memory file of session %s: %w", sessionID, err)
	}
	return body, nil
}

func (s *Store) PruneMemoryFiles(ctx context.Context, sessionID, keep string) error {
	return s.write(ctx, "memory.prune", func(tx *sql.Tx) error {
		if _, err := s.exec(ctx, tx, qPruneMemoryFiles, sessionID, keep); err != nil {
			return fmt.Errorf("prune memory files of session %s: %w", sessionID, err)
		}
		return nil
	})
}
