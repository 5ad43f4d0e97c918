package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
)

var _ store.JournalStore = (*Store)(nil)

var (
	qJournalGrow      = prepared("INSERT INTO journals (run_id, size, updated_at) VALUES (?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET size = size + excluded.size, updated_at = excluded.updated_at RETURNING size")
	qJournalChunk     = prepared("INSERT INTO journal_chunks (run_id, off, data) VALUES (?, ?, ?)")
	qJournalSize      = prepared("SELECT size FROM journals WHERE run_id = ?")
	qJournalChunks    = prepared("SELECT off, data FROM journal_chunks WHERE run_id = ? AND off >= coalesce((SELECT max(off) FROM journal_chunks WHERE run_id = ? AND off <= ?), 0) ORDER BY off LIMIT ?")
	qJournalDrop      = prepared("DELETE FROM journals WHERE run_id = ? RETURNING size")
	qJournalChunkDrop = prepared("DELETE FROM journal_chunks WHERE run_id = ?")
	qJournalStale     = prepared("SELECT run_id FROM journals WHERE updated_at < ? AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.id = journals.run_id) ORDER BY updated_at, run_id LIMIT ?")
)

func (s *Store) AppendJournal(ctx context.Context, runID string, data []byte) (int64, error) {
	if err := store.CheckJournalAppend(runID, data); err != nil {
		return 0, err
	}
	if len(data) == 0 {
		return s.JournalSize(ctx, runID)
	}
	var size int64
	err := s.write(ctx, "journal.append", func(tx *sql.Tx) error {
		now := store.At(time.Time{}).UnixMilli()
		if err := s.txQueryRow(ctx, tx, qJournalGrow, runID, len(data), now).Scan(&size); err != nil {
			return fmt.Errorf("append journal %s: %w", runID, err)
		}
		if _, err := s.exec(ctx, tx, qJournalChunk, runID, size-int64(len(data)), data); err != nil {
			return fmt.Errorf("append journal %s: %w", runID, err)
		}
		return nil
	})
	return size, err
}

func (s *Store) ReadJournal(ctx context.Context, runID string, off int64, max int) ([]byte, error) {
	if max <= 0 {
		return nil, nil
	}
	rows, err := s.query(ctx, qJournalChunks, runID, runID, off, store.JournalReadChunks)
	chunks, err := scanRows(rows, err, func(r rowScanner) (store.JournalChunk, error) {
		var c store.JournalChunk
		err := r.Scan(&c.Off, &c.Data)
		return c, err
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", runID, err)
	}
	return store.CutJournal(chunks, off, max), nil
}

func (s *Store) JournalSize(ctx context.Context, runID string) (int64, error) {
	var n int64
	err := s.queryRow(ctx, qJournalSize, runID).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read journal %s: %w", runID, err)
	}
	return n, nil
}

func (s *Store) DeleteJournal(ctx context.Context, runID string) (int64, error) {
	var n int64
	err := s.write(ctx, "journal.delete", func(tx *sql.Tx) error {
		n = 0
		err := s.txQueryRow(ctx, tx, qJournalDrop, runID).Scan(&n)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("delete journal %s: %w", runID, err)
		}
		if _, err := s.exec(ctx, tx, qJournalChunkDrop, runID); err != nil {
			return fmt.Errorf("delete journal %s: %w", runID, err)
		}
		return nil
	})
	return n, err
}

func (s *Store) StaleJournals(ctx context.Context, before time.Time, limit int) ([]string, error) {
	rows, err := s.query(ctx, qJournalStale, before.UnixMilli(), max(limit, 0))
	out, err := scanRows(rows, err, func(r rowScanner) (string, error) {
		var id string
		err := r.Scan(&id)
		return id, err
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("list stale journals: %w", err)
	}
	return out, nil
}
