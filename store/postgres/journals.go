package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var _ store.JournalStore = (*Store)(nil)
var _ store.JournalStore = (*Journals)(nil)

// Journals is the journal half of the store over a pool: what Store's
// journal methods use, and what a step supervisor (a separate process
// that only appends its step's output) opens alone with OpenJournals.
//
// Appends are single statements outside the operation log: a journal is
// history, not state, and an append whose outcome is unknown is not tried
// again (a follower then misses that chunk's records, as with a file).
type Journals struct {
	pool  *pgxpool.Pool
	owned bool // Close closes the pool
}

// OpenJournals connects to the journals of cfg's workspace, whose schema
// a host's Open created: a pool of at most 2 connections (cfg.MaxConns
// when set), no migrations.
func OpenJournals(ctx context.Context, cfg Config) (*Journals, error) {
	schema, err := SchemaName(cfg.WorkspaceID)
	if err != nil {
		return nil, fmt.Errorf("open journals: %w", err)
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("open journals: parse the database URL: %w", err)
	}
	pc.MaxConns = 2
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	pc.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err == nil {
		err = pool.Ping(ctx) // the caller falls back when unreachable
		if err != nil {
			pool.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open journals %s: %w", schema, err)
	}
	return &Journals{pool: pool, owned: true}, nil
}

// Close closes the pool OpenJournals made.
func (j *Journals) Close() {
	if j.owned {
		j.pool.Close()
	}
}

func (s *Store) journals() *Journals { return &Journals{pool: s.pool} }

const (
	qAppendJournal = `WITH j AS (
  INSERT INTO journals (run_id, size, updated_at) VALUES ($1, $2, now())
  ON CONFLICT (run_id) DO UPDATE SET size = journals.size + EXCLUDED.size, updated_at = EXCLUDED.updated_at
  RETURNING size)
INSERT INTO journal_chunks (run_id, off, data) SELECT $1, j.size - $2, $3 FROM j RETURNING off + $2`
	qJournalSize   = "SELECT size FROM journals WHERE run_id = $1"
	qJournalChunks = `SELECT off, data FROM journal_chunks WHERE run_id = $1
  AND off >= coalesce((SELECT max(off) FROM journal_chunks WHERE run_id = $1 AND off <= $2), 0)
  ORDER BY off LIMIT $3`
	qDeleteJournal = `WITH c AS (DELETE FROM journal_chunks WHERE run_id = $1)
DELETE FROM journals WHERE run_id = $1 RETURNING size`
	qStaleJournals = `SELECT run_id FROM journals WHERE updated_at < $1
  AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.id = journals.run_id)
  ORDER BY updated_at, run_id LIMIT $2`
)

func (j *Journals) AppendJournal(ctx context.Context, runID string, data []byte) (int64, error) {
	if err := store.CheckJournalAppend(runID, data); err != nil {
		return 0, err
	}
	if len(data) == 0 {
		return j.JournalSize(ctx, runID)
	}
	var size int64
	if err := j.pool.QueryRow(ctx, qAppendJournal, runID, int64(len(data)), data).Scan(&size); err != nil {
		return 0, fmt.Errorf("append journal %s: %w", runID, err)
	}
	return size, nil
}

func (j *Journals) ReadJournal(ctx context.Context, runID string, off int64, max int) ([]byte, error) {
	if max <= 0 {
		return nil, nil
	}
	rows, err := j.pool.Query(ctx, qJournalChunks, runID, off, store.JournalReadChunks)
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", runID, err)
	}
	chunks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.JournalChunk, error) {
		var c store.JournalChunk
		err := r.Scan(&c.Off, &c.Data)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", runID, err)
	}
	return store.CutJournal(chunks, off, max), nil
}

func (j *Journals) JournalSize(ctx context.Context, runID string) (int64, error) {
	var n int64
	err := j.pool.QueryRow(ctx, qJournalSize, runID).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read journal %s: %w", runID, err)
	}
	return n, nil
}

func (j *Journals) DeleteJournal(ctx context.Context, runID string) (int64, error) {
	var n int64
	err := j.pool.QueryRow(ctx, qDeleteJournal, runID).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("delete journal %s: %w", runID, err)
	}
	return n, nil
}

func (j *Journals) StaleJournals(ctx context.Context, before time.Time, limit int) ([]string, error) {
	rows, err := j.pool.Query(ctx, qStaleJournals, before, max(limit, 0))
	if err != nil {
		return nil, fmt.Errorf("list stale journals: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list stale journals: %w", err)
	}
	return out, nil
}

func (s *Store) AppendJournal(ctx context.Context, runID string, data []byte) (int64, error) {
	return s.journals().AppendJournal(ctx, runID, data)
}

func (s *Store) ReadJournal(ctx context.Context, runID string, off int64, max int) ([]byte, error) {
	return s.journals().ReadJournal(ctx, runID, off, max)
}

func (s *Store) JournalSize(ctx context.Context, runID string) (int64, error) {
	return s.journals().JournalSize(ctx, runID)
}

func (s *Store) DeleteJournal(ctx context.Context, runID string) (int64, error) {
	return s.journals().DeleteJournal(ctx, runID)
}

func (s *Store) StaleJournals(ctx context.Context, before time.Time, limit int) ([]string, error) {
	return s.journals().StaleJournals(ctx, before, limit)
}
