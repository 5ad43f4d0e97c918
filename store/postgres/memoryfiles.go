package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/store"
	"github.com/jackc/pgx/v5"
)

var _ store.MemoryFileStore = (*Store)(nil)

func (s *Store) PutMemoryFile(ctx context.Context, sessionID, archiveID, body string) error {
	if err := store.CheckMemoryFile(sessionID, archiveID); err != nil {
		return err
	}
	return s.write(ctx, "memory.put", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO memory_files (session_id, archive_id, body) VALUES ($1, $2, $3)
ON CONFLICT (session_id, archive_id) DO UPDATE SET body = EXCLUDED.body`, sessionID, archiveID, body)
		if err != nil {
			return fmt.Errorf("store memory file of session %s: %w", sessionID, err)
		}
		return nil
	})
}

func (s *Store) GetMemoryFile(ctx context.Context, sessionID, archiveID string) (string, error) {
	var body string
	err := s.pool.QueryRow(ctx, "SELECT body FROM memory_files WHERE session_id = $1 AND archive_id = $2", sessionID, archiveID).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", &store.NotFoundError{Kind: "memory file", ID: sessionID + "/" + archiveID}
	}
	if err != nil {
		return "", fmt.Errorf("read memory file of session %s: %w", sessionID, err)
	}
	return body, nil
}

func (s *Store) PruneMemoryFiles(ctx context.Context, sessionID, keep string) error {
	return s.write(ctx, "memory.prune", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "DELETE FROM memory_files WHERE session_id = $1 AND archive_id <> $2", sessionID, keep); err != nil {
			return fmt.Errorf("prune memory files of session %s: %w", sessionID, err)
		}
		return nil
	})
}
