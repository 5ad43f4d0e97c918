package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// Compaction (T1 prepare, T2 commit or fail) and archive retention.

func (s *Store) PrepareCompaction(ctx context.Context, p store.PrepareCompactionParams) (*store.CompactionResult, error) {
	if p.KeepLast < 0 {
		return nil, fmt.Errorf("compact session %s: keep last %d: must not be negative", p.SessionID, p.KeepLast)
	}
	var out *store.CompactionResult
	err := s.write(ctx, "session.compact.prepare", func(tx *sql.Tx) error {
		out = nil
		now := store.Millis(store.At(p.Now))
		sess, err := getSession(ctx, tx, p.SessionID)
		if err != nil {
			return err
		}
		res := &store.CompactionResult{Session: sess}
		// Whoever prepares holds the session's compaction lock, so every
		// prepared attempt left is abandoned: its process died.
		if res.Interrupted, err = interruptAbandoned(ctx, tx, p.SessionID, now); err != nil {
			return err
		}
		var cut int64
		err = tx.QueryRowContext(ctx, "SELECT seq FROM session_messages WHERE session_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?", p.SessionID, p.KeepLast).Scan(&cut)
		if errors.Is(err, sql.ErrNoRows) {
			return &store.NothingToCompactError{SessionID: p.SessionID, Messages: sess.MessageCount, KeepLast: p.KeepLast}
		}
		if err != nil {
			return fmt.Errorf("compact session %s: %w", p.SessionID, err)
		}
		frozen, err := digestSession(ctx, tx, sess, p.Memory)
		if err != nil {
			return err
		}
		a := &store.Archive{ID: p.ArchiveID, SessionID: p.SessionID, Status: store.ArchivePrepared, CutSeq: cut,
			MessageCount: frozen.messages, Digest: frozen.digest, CreatedAt: now}
		ins, err := tx.ExecContext(ctx, "INSERT INTO session_archives (id, session_id, status, cut_seq, message_count, digest, state, in_rows, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?) ON CONFLICT DO NOTHING",
			a.ID, a.SessionID, a.Status, a.CutSeq, a.MessageCount, a.Digest, string(frozen.head), now.UnixMilli())
		if err != nil {
			return fmt.Errorf("archive session %s: %w", p.SessionID, err)
		}
		if n, err := ins.RowsAffected(); err != nil {
			return fmt.Errorf("archive session %s: %w", p.SessionID, err)
		} else if n == 0 {
			return fmt.Errorf("archive session %s: archive id %s: %w", p.SessionID, a.ID, store.ErrExists)
		}
		n, err := ins.LastInsertId()
		if err != nil {
			return fmt.Errorf("archive session %s: %w", p.SessionID, err)
		}
		if err := copyMessages(ctx, tx, p.SessionID, n); err != nil {
			return err
		}
		res.Archive = a
		if res.Pruned, err = pruneArchives(ctx, tx, p.SessionID, a.ID, p.MaxArchives); err != nil {
			return err
		}
		out = res
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func interruptAbandoned(ctx context.Context, tx *sql.Tx, sessionID string, now time.Time) ([]string, error) {
	ids, err := queryStrings(ctx, tx, "SELECT id FROM session_archives WHERE session_id = ? AND status = 'prepared' ORDER BY n", sessionID)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	_, err = tx.ExecContext(ctx, "UPDATE session_archives SET status = 'interrupted', error = 'abandoned before it settled (its process stopped)', settled_at = ? WHERE session_id = ? AND status = 'prepared'",
		now.UnixMilli(), sessionID)
	if err != nil {
		return nil, fmt.Errorf("settle abandoned compactions of session %s: %w", sessionID, err)
	}
	return ids, nil
}

// pruneArchives keeps the newest maxArchives complete archives of a
// session (the current one counted and always kept) and deletes the other
// complete ones. Prepared archives are never touched; maxArchives <= 0
// keeps everything.
func pruneArchives(ctx context.Context, tx *sql.Tx, sessionID, current string, maxArchives int) ([]string, error) {
	if maxArchives <= 0 {
		return nil, nil
	}
	complete, err := queryStrings(ctx, tx, "SELECT id FROM session_archives WHERE session_id = ? AND status != 'prepared' ORDER BY n DESC", sessionID)
	if err != nil || len(complete) <= maxArchives {
		return nil, err
	}
	var pruned []string
	for _, id := range complete[maxArchives:] {
		if id == current {
			continue
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM session_archives WHERE id = ?", id); err != nil {
			return nil, fmt.Errorf("delete archive %s: %w", id, err)
		}
		pruned = append(pruned, id)
	}
	return pruned, nil
}

func queryStrings(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("query archives: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("query archives: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query archives: %w", err)
	}
	return out, nil
}

// preparedArchive returns a session's attempt, refusing one that is not
// prepared.
func preparedArchive(ctx context.Context, tx *sql.Tx, sessionID, archiveID string) (*store.Archive, error) {
	a, err := scanArchive(tx.QueryRowContext(ctx, "SELECT "+archiveColumns+" FROM session_archives WHERE id = ? AND session_id = ?", archiveID, sessionID), false)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "archive", ID: archiveID}
	}
	if err != nil {
		return nil, fmt.Errorf("get archive %s: %w", archiveID, err)
	}
	if a.Status != store.ArchivePrepared {
		return nil, &store.AttemptSettledError{ArchiveID: archiveID, Status: a.Status}
	}
	return a, nil
}

func (s *Store) CommitCompaction(ctx context.Context, p store.CommitCompactionParams) (*store.CompactionResult, error) {
	if p.Summary == nil || !p.Summary.Role.Valid() {
		return nil, fmt.Errorf("commit compaction %s: a summary message with a valid role is required", p.ArchiveID)
	}
	sum := *p.Summary
	var out *store.CompactionResult
	err := s.write(ctx, "session.compact.commit", func(tx *sql.Tx) error {
		out = nil
		now := store.Millis(store.At(p.Now))
		a, err := preparedArchive(ctx, tx, p.SessionID, p.ArchiveID)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM session_messages WHERE session_id = ? AND seq <= ?", p.SessionID, a.CutSeq)
		if err != nil {
			return fmt.Errorf("compact session %s: %w", p.SessionID, err)
		}
		removed, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("compact session %s: %w", p.SessionID, err)
		}
		m := sum
		m.SessionID, m.Seq, m.CreatedAt = p.SessionID, a.CutSeq, now
		if m.ID == "" {
			m.ID = ids.New("msg")
		}
		stmt, err := s.txStmt(ctx, tx, qInsertMessage)
		if err != nil {
			return fmt.Errorf("compact session %s: %w", p.SessionID, err)
		}
		if err := insertMessage(ctx, stmt, &m); err != nil {
			return err
		}
		sess, err := scanSession(tx.QueryRowContext(ctx, "UPDATE sessions SET message_count = message_count - ? + 1, compactions = compactions + 1, summary_archive = ?, compacted_at = ?, revision = revision + 1, updated_at = ? WHERE id = ? RETURNING "+sessionColumns,
			removed, p.ArchiveID, now.UnixMilli(), now.UnixMilli(), p.SessionID))
		if err != nil {
			return fmt.Errorf("compact session %s: %w", p.SessionID, err)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE session_archives SET status = 'succeeded', settled_at = ? WHERE id = ?", now.UnixMilli(), p.ArchiveID); err != nil {
			return fmt.Errorf("settle compaction %s: %w", p.ArchiveID, err)
		}
		a.Status, a.SettledAt = store.ArchiveSucceeded, now
		out = &store.CompactionResult{Session: sess, Archive: a, Compacted: removed}
		out.Pruned, err = pruneArchives(ctx, tx, p.SessionID, p.ArchiveID, p.MaxArchives)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) FailCompaction(ctx context.Context, p store.FailCompactionParams) (*store.CompactionResult, error) {
	var out *store.CompactionResult
	err := s.write(ctx, "session.compact.fail", func(tx *sql.Tx) error {
		out = nil
		now := store.Millis(store.At(p.Now))
		a, err := preparedArchive(ctx, tx, p.SessionID, p.ArchiveID)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE session_archives SET status = 'failed', error = ?, settled_at = ? WHERE id = ?", p.Reason, now.UnixMilli(), p.ArchiveID); err != nil {
			return fmt.Errorf("settle compaction %s: %w", p.ArchiveID, err)
		}
		a.Status, a.Error, a.SettledAt = store.ArchiveFailed, p.Reason, now
		sess, err := getSession(ctx, tx, p.SessionID)
		if err != nil {
			return err
		}
		out = &store.CompactionResult{Session: sess, Archive: a}
		out.Pruned, err = pruneArchives(ctx, tx, p.SessionID, p.ArchiveID, p.MaxArchives)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) ListArchives(ctx context.Context, sessionID string) ([]*store.Archive, error) {
	if _, err := getSession(ctx, s.r, sessionID); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, "SELECT "+archiveColumns+" FROM session_archives WHERE session_id = ? ORDER BY n DESC", sessionID)
	scanHead := func(row rowScanner) (*store.Archive, error) { return scanArchive(row, false) }
	out, err := scanRows(rows, err, scanHead, nil)
	if err != nil {
		return nil, fmt.Errorf("list archives of session %s: %w", sessionID, err)
	}
	return out, nil
}

func (s *Store) GetArchive(ctx context.Context, id string) (*store.Archive, error) {
	// One read transaction: the rows of an archive pruned meanwhile are
	// never mixed with its head.
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("get archive %s: %w", id, err)
	}
	defer tx.Rollback()
	var n, inRows int64
	a, err := scanArchive(tx.QueryRowContext(ctx, "SELECT "+archiveColumns+", state, n, in_rows FROM session_archives WHERE id = ?", id), true, &n, &inRows)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "archive", ID: id}
	}
	if err != nil {
		return nil, fmt.Errorf("get archive %s: %w", id, err)
	}
	if inRows == 1 {
		if a.State, err = archiveState(ctx, tx, n, a.State); err != nil {
			return nil, fmt.Errorf("get archive %s: %w", id, err)
		}
	}
	return a, nil
}

// scanArchive scans archiveColumns, then state when withState, then extra.
func scanArchive(row rowScanner, withState bool, extra ...any) (*store.Archive, error) {
	var (
		a                store.Archive
		created, settled int64
		state            string
	)
	dest := []any{&a.ID, &a.SessionID, &a.Status, &a.CutSeq, &a.MessageCount, &a.Digest, &a.Error, &created, &settled}
	if withState {
		dest = append(dest, &state)
	}
	dest = append(dest, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	if withState {
		a.State = json.RawMessage(state)
	}
	a.CreatedAt = millisTime(created)
	if settled != 0 {
		a.SettledAt = millisTime(settled)
	}
	return &a, nil
}
