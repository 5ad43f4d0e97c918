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

// Compaction (T1 prepare, T2 commit or fail) and archive retention. Each
// step is one short write operation plus slices (see slices.go): T1
// inserts the attempt, copies the messages into it in slices, takes its
// digest on the read pool and seals it; T2 replaces the messages with
// the summary by moving the session's first_seq (the replaced ones are
// hidden at once) and deletes them in slices after. Pruned archives are
// hidden first (in_rows = 2) and deleted in slices.

// prepared is what T1's first write decided.
type preparedAttempt struct {
	res        *store.CompactionResult
	n          int64 // the archive's row number
	head       []byte
	from, upTo int64 // the frozen messages' seq range
}

func (s *Store) PrepareCompaction(ctx context.Context, p store.PrepareCompactionParams) (*store.CompactionResult, error) {
	if p.KeepLast < 0 {
		return nil, fmt.Errorf("compact session %s: keep last %d: must not be negative", p.SessionID, p.KeepLast)
	}
	// Leftovers of a commit whose process died before its slices ended.
	if err := s.dropHidden(ctx, p.SessionID); err != nil {
		return nil, err
	}
	var at *preparedAttempt
	err := s.write(ctx, "session.compact.prepare", func(tx *sql.Tx) error {
		var err error
		at, err = insertAttempt(ctx, tx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := s.copySliced(ctx, p.SessionID, at.n, at.from, at.upTo); err != nil {
		return nil, err
	}
	a := at.res.Archive
	if a.Digest, a.MessageCount, err = s.digestArchive(ctx, at.n, at.head); err != nil {
		return nil, fmt.Errorf("freeze session %s: %w", p.SessionID, err)
	}
	err = s.write(withNewOp(ctx), "session.compact.seal", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE session_archives SET digest = ?, message_count = ? WHERE n = ? AND digest = '' AND status = 'prepared'", a.Digest, a.MessageCount, at.n)
		if err != nil {
			return fmt.Errorf("seal archive %s: %w", a.ID, err)
		}
		if k, err := res.RowsAffected(); err != nil || k != 1 {
			return fmt.Errorf("seal archive %s: it was settled meanwhile (%v)", a.ID, err)
		}
		more, err := hideExcess(ctx, tx, p.SessionID, a.ID, p.MaxArchives)
		at.res.Pruned = append(at.res.Pruned, more...)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := s.dropPruned(ctx, p.SessionID); err != nil {
		return nil, err
	}
	return at.res, nil
}

// insertAttempt is T1's first write: it settles abandoned attempts, finds
// the cut and inserts the attempt, unsealed (digest ”), with the
// session's record as its head.
func insertAttempt(ctx context.Context, tx *sql.Tx, p store.PrepareCompactionParams) (*preparedAttempt, error) {
	now := store.Millis(store.At(p.Now))
	sess, err := getSession(ctx, tx, p.SessionID)
	if err != nil {
		return nil, err
	}
	res := &store.CompactionResult{Session: sess}
	// Whoever prepares holds the session's compaction lock, so every
	// prepared attempt left is abandoned: its process died.
	if res.Interrupted, err = interruptAbandoned(ctx, tx, p.SessionID, now); err != nil {
		return nil, err
	}
	// Settled just now, those count towards retention at once.
	if res.Pruned, err = hideExcess(ctx, tx, p.SessionID, p.ArchiveID, p.MaxArchives); err != nil {
		return nil, err
	}
	var first, cut int64
	if err := tx.QueryRowContext(ctx, "SELECT first_seq FROM sessions WHERE id = ?", p.SessionID).Scan(&first); err != nil {
		return nil, fmt.Errorf("compact session %s: %w", p.SessionID, err)
	}
	err = tx.QueryRowContext(ctx, "SELECT seq FROM session_messages WHERE session_id = ? AND seq >= ? ORDER BY seq DESC LIMIT 1 OFFSET ?", p.SessionID, first, p.KeepLast).Scan(&cut)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.NothingToCompactError{SessionID: p.SessionID, Messages: sess.MessageCount, KeepLast: p.KeepLast}
	}
	if err != nil {
		return nil, fmt.Errorf("compact session %s: %w", p.SessionID, err)
	}
	head, err := json.Marshal(archiveHead{Session: *sess, Memory: p.Memory})
	if err != nil {
		return nil, fmt.Errorf("freeze session %s: %w", p.SessionID, err)
	}
	a := &store.Archive{ID: p.ArchiveID, SessionID: p.SessionID, Status: store.ArchivePrepared, CutSeq: cut, CreatedAt: now}
	ins, err := tx.ExecContext(ctx, "INSERT INTO session_archives (id, session_id, status, cut_seq, message_count, digest, state, in_rows, created_at) VALUES (?, ?, ?, ?, 0, '', ?, 1, ?) ON CONFLICT DO NOTHING",
		a.ID, a.SessionID, a.Status, a.CutSeq, string(head), now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("archive session %s: %w", p.SessionID, err)
	}
	if n, err := ins.RowsAffected(); err != nil {
		return nil, fmt.Errorf("archive session %s: %w", p.SessionID, err)
	} else if n == 0 {
		return nil, fmt.Errorf("archive session %s: archive id %s: %w", p.SessionID, a.ID, store.ErrExists)
	}
	n, err := ins.LastInsertId()
	if err != nil {
		return nil, fmt.Errorf("archive session %s: %w", p.SessionID, err)
	}
	res.Archive = a
	return &preparedAttempt{res: res, n: n, head: head, from: first, upTo: sess.LastSeq}, nil
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

// hideExcess keeps the newest maxArchives complete archives of a session
// (the current one counted and always kept) and hides the other complete
// ones (in_rows = 2) inside tx, the write that settles an attempt, so the
// retention target holds at once; dropPruned deletes them after, in
// slices. Prepared archives are never touched; maxArchives <= 0 keeps
// everything.
func hideExcess(ctx context.Context, tx *sql.Tx, sessionID, current string, maxArchives int) ([]string, error) {
	if maxArchives <= 0 {
		return nil, nil
	}
	complete, err := queryStrings(ctx, tx, "SELECT id FROM session_archives WHERE session_id = ? AND status != 'prepared' AND in_rows != 2 AND digest != '' ORDER BY n DESC", sessionID)
	if err != nil || len(complete) <= maxArchives {
		return nil, err
	}
	var pruned []string
	for _, id := range complete[maxArchives:] {
		if id == current {
			continue
		}
		if _, err := tx.ExecContext(ctx, "UPDATE session_archives SET in_rows = 2 WHERE id = ?", id); err != nil {
			return nil, fmt.Errorf("delete archive %s: %w", id, err)
		}
		pruned = append(pruned, id)
	}
	return pruned, nil
}

// dropPruned deletes a session's hidden archives, their rows in slices:
// those hideExcess pruned, and those abandoned before their prepare
// sealed them (readers never see an archive without its digest).
func (s *Store) dropPruned(ctx context.Context, sessionID string) error {
	rows, err := s.r.QueryContext(ctx, "SELECT n FROM session_archives WHERE session_id = ? AND (in_rows = 2 OR (digest = '' AND status != 'prepared'))", sessionID)
	var victims []int64
	if err == nil {
		for rows.Next() {
			var n int64
			if err = rows.Scan(&n); err != nil {
				break
			}
			victims = append(victims, n)
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil {
		return fmt.Errorf("find pruned archives of session %s: %w", sessionID, err)
	}
	for _, n := range victims {
		if err := s.dropArchiveRows(ctx, n); err != nil {
			return err
		}
		err := s.write(withNewOp(ctx), "session.archive.prune", func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "DELETE FROM session_archives WHERE n = ?", n)
			return err
		})
		if err != nil {
			return fmt.Errorf("delete archive of session %s: %w", sessionID, err)
		}
	}
	return nil
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
		if a.Digest == "" {
			return fmt.Errorf("commit compaction %s: the attempt was never sealed (its prepare did not finish)", p.ArchiveID)
		}
		// The replaced messages are those the archive froze up to the
		// cut; the ones after it are few (keep last). The summary takes
		// the cut's seq; the others are hidden below first_seq and
		// deleted in slices after this commit.
		var removed int64
		err = tx.QueryRowContext(ctx, "SELECT ? - count(*) FROM session_archive_messages WHERE archive_n = (SELECT n FROM session_archives WHERE id = ?) AND seq > ?",
			a.MessageCount, p.ArchiveID, a.CutSeq).Scan(&removed)
		if err != nil {
			return fmt.Errorf("compact session %s: %w", p.SessionID, err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM session_messages WHERE session_id = ? AND seq = ?", p.SessionID, a.CutSeq); err != nil {
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
		sess, err := scanSession(tx.QueryRowContext(ctx, "UPDATE sessions SET first_seq = ?, message_count = message_count - ? + 1, compactions = compactions + 1, summary_archive = ?, compacted_at = ?, revision = revision + 1, updated_at = ? WHERE id = ? RETURNING "+sessionColumns,
			a.CutSeq, removed, p.ArchiveID, now.UnixMilli(), now.UnixMilli(), p.SessionID))
		if err != nil {
			return fmt.Errorf("compact session %s: %w", p.SessionID, err)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE session_archives SET status = 'succeeded', settled_at = ? WHERE id = ?", now.UnixMilli(), p.ArchiveID); err != nil {
			return fmt.Errorf("settle compaction %s: %w", p.ArchiveID, err)
		}
		a.Status, a.SettledAt = store.ArchiveSucceeded, now
		out = &store.CompactionResult{Session: sess, Archive: a, Compacted: removed}
		out.Pruned, err = hideExcess(ctx, tx, p.SessionID, p.ArchiveID, p.MaxArchives)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := s.dropHidden(ctx, p.SessionID); err != nil {
		return nil, err
	}
	if err := s.dropPruned(ctx, p.SessionID); err != nil {
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
		out.Pruned, err = hideExcess(ctx, tx, p.SessionID, p.ArchiveID, p.MaxArchives)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := s.dropPruned(ctx, p.SessionID); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) ListArchives(ctx context.Context, sessionID string) ([]*store.Archive, error) {
	if _, err := getSession(ctx, s.r, sessionID); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, "SELECT "+archiveColumns+" FROM session_archives WHERE session_id = ? AND in_rows != 2 AND digest != '' ORDER BY n DESC", sessionID)
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
	a, err := scanArchive(tx.QueryRowContext(ctx, "SELECT "+archiveColumns+", state, n, in_rows FROM session_archives WHERE id = ? AND in_rows != 2 AND digest != ''", id), true, &n, &inRows)
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
