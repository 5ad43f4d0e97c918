package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// Compaction (T1 prepare, T2 commit or fail) and archive retention. Each
// step is one transaction. The steps of one session take turns through a
// transaction advisory lock of the session (lockCompaction), on every
// host; appends do not take it, and go on during a prepare: the prepare
// freezes the messages up to the last_seq it read, which no append
// changes (appends commit in sequence order) and no other step can
// (they wait for the lock). PostgreSQL's writers do not wait for one
// another's long transactions, so unlike store/sqlite nothing is sliced:
// only a commit holds the session's row (appends wait) while it deletes
// the replaced messages.

// archiveColumns leaves out the head, which only GetArchive reads.
const archiveColumns = "id, session_id, status, cut_seq, message_count, digest, error, created_at, settled_at"

// archiveHead is the head column of an archive: its store.ArchiveState
// without the messages, which are rows of session_archive_messages.
type archiveHead struct {
	Session store.Session `json:"session"`
	Memory  string        `json:"memory,omitempty"`
}

// lockCompaction makes tx the only compaction step of the session until
// it ends.
func lockCompaction(ctx context.Context, tx pgx.Tx, sessionID string) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '.compact.' || $1, 0))", sessionID); err != nil {
		return fmt.Errorf("lock compaction of session %s: %w", sessionID, err)
	}
	return nil
}

func (s *Store) PrepareCompaction(ctx context.Context, p store.PrepareCompactionParams) (*store.CompactionResult, error) {
	if p.KeepLast < 0 {
		return nil, fmt.Errorf("compact session %s: keep last %d: must not be negative", p.SessionID, p.KeepLast)
	}
	var out *store.CompactionResult
	err := s.write(ctx, "session.compact.prepare", func(tx pgx.Tx) error {
		var err error
		out, err = prepareAttempt(ctx, tx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// prepareAttempt is T1: it settles abandoned attempts, finds the cut,
// digests the frozen state streaming the messages, and inserts the
// attempt with its message rows.
func prepareAttempt(ctx context.Context, tx pgx.Tx, p store.PrepareCompactionParams) (*store.CompactionResult, error) {
	if err := lockCompaction(ctx, tx, p.SessionID); err != nil {
		return nil, err
	}
	now := store.Millis(store.At(p.Now))
	sess, err := getSession(ctx, tx, p.SessionID)
	if err != nil {
		return nil, err
	}
	res := &store.CompactionResult{Session: sess}
	// Whoever prepares holds the session's compaction lock (package
	// sessions), so every prepared attempt left is abandoned: its process
	// died. (That lock is a lock file: across machines the attempt may
	// be another host's; its commit is then refused, nothing is lost.)
	if res.Interrupted, err = interruptAbandoned(ctx, tx, p.SessionID, now); err != nil {
		return nil, err
	}
	// Settled just now, those count towards retention at once.
	if res.Pruned, err = pruneExcess(ctx, tx, p.SessionID, p.ArchiveID, p.MaxArchives); err != nil {
		return nil, err
	}
	upTo := sess.LastSeq // the frozen messages are those up to it
	var cut int64
	err = tx.QueryRow(ctx, "SELECT seq FROM session_messages WHERE session_id = $1 AND seq <= $2 ORDER BY seq DESC LIMIT 1 OFFSET $3", p.SessionID, upTo, p.KeepLast).Scan(&cut)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &store.NothingToCompactError{SessionID: p.SessionID, Messages: sess.MessageCount, KeepLast: p.KeepLast}
	}
	if err != nil {
		return nil, fmt.Errorf("compact session %s: %w", p.SessionID, err)
	}
	h := archiveHead{Session: *sess, Memory: p.Memory}
	head, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("freeze session %s: %w", p.SessionID, err)
	}
	digest, count, err := digestMessages(ctx, tx, h, "SELECT "+messageColumns+" FROM session_messages WHERE session_id = $1 AND seq <= $2 ORDER BY seq", p.SessionID, upTo)
	if err != nil {
		return nil, fmt.Errorf("freeze session %s: %w", p.SessionID, err)
	}
	if count != sess.MessageCount {
		return nil, fmt.Errorf("freeze session %s: %d messages up to seq %d, the session counts %d", p.SessionID, count, upTo, sess.MessageCount)
	}
	a := &store.Archive{ID: p.ArchiveID, SessionID: p.SessionID, Status: store.ArchivePrepared, CutSeq: cut, MessageCount: count, Digest: digest, CreatedAt: now}
	var n int64
	err = tx.QueryRow(ctx, "INSERT INTO session_archives (id, session_id, status, cut_seq, message_count, digest, head, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING RETURNING n",
		a.ID, a.SessionID, a.Status, a.CutSeq, a.MessageCount, a.Digest, string(head), a.CreatedAt).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("archive session %s: archive id %s: %w", p.SessionID, a.ID, store.ErrExists)
	}
	if err != nil {
		return nil, fmt.Errorf("archive session %s: %w", p.SessionID, err)
	}
	tag, err := tx.Exec(ctx, "INSERT INTO session_archive_messages (archive_n, "+messageColumns+") SELECT $1, "+messageColumns+" FROM session_messages WHERE session_id = $2 AND seq <= $3",
		n, p.SessionID, upTo)
	if err != nil {
		return nil, fmt.Errorf("archive messages of session %s: %w", p.SessionID, err)
	}
	if tag.RowsAffected() != count {
		return nil, fmt.Errorf("archive messages of session %s: copied %d of %d", p.SessionID, tag.RowsAffected(), count)
	}
	res.Archive = a
	return res, nil
}

func interruptAbandoned(ctx context.Context, tx pgx.Tx, sessionID string, now time.Time) ([]string, error) {
	rows, err := tx.Query(ctx, "WITH settled AS (UPDATE session_archives SET status = 'interrupted', error = 'abandoned before it settled (its process stopped)', settled_at = $2 "+
		"WHERE session_id = $1 AND status = 'prepared' RETURNING n, id) SELECT id FROM settled ORDER BY n", sessionID, now)
	if err != nil {
		return nil, fmt.Errorf("settle abandoned compactions of session %s: %w", sessionID, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("settle abandoned compactions of session %s: %w", sessionID, err)
	}
	return out, nil
}

// pruneExcess keeps the newest maxArchives complete archives of a session
// (the current one counted and always kept) and deletes the other
// complete ones with their rows, inside tx, the write that settles or
// starts an attempt. Prepared archives are never deleted; maxArchives <=
// 0 keeps everything.
func pruneExcess(ctx context.Context, tx pgx.Tx, sessionID, current string, maxArchives int) ([]string, error) {
	if maxArchives <= 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, "SELECT id FROM session_archives WHERE session_id = $1 AND status <> 'prepared' ORDER BY n DESC", sessionID)
	if err != nil {
		return nil, fmt.Errorf("find old archives of session %s: %w", sessionID, err)
	}
	complete, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(complete) <= maxArchives {
		return nil, err
	}
	var pruned []string
	for _, id := range complete[maxArchives:] {
		if id != current {
			pruned = append(pruned, id)
		}
	}
	// Their message rows go with them (ON DELETE CASCADE).
	if _, err := tx.Exec(ctx, "DELETE FROM session_archives WHERE id = ANY($1)", pruned); err != nil {
		return nil, fmt.Errorf("delete old archives of session %s: %w", sessionID, err)
	}
	return pruned, nil
}

// preparedArchive takes the session's compaction lock, reads its attempt
// inside tx, locking its row, and refuses one that is not prepared.
func preparedArchive(ctx context.Context, tx pgx.Tx, sessionID, archiveID string) (*store.Archive, error) {
	if err := lockCompaction(ctx, tx, sessionID); err != nil {
		return nil, err
	}
	a, err := scanArchive(tx.QueryRow(ctx, "SELECT "+archiveColumns+" FROM session_archives WHERE id = $1 AND session_id = $2 FOR UPDATE", archiveID, sessionID))
	if errors.Is(err, pgx.ErrNoRows) {
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
	var out *store.CompactionResult
	err := s.write(ctx, "session.compact.commit", func(tx pgx.Tx) error {
		now := store.Millis(store.At(p.Now))
		a, err := preparedArchive(ctx, tx, p.SessionID, p.ArchiveID)
		if err != nil {
			return err
		}
		// Appends wait from here (the session's row is theirs too), not
		// at a message of this commit they collide with.
		if _, err := tx.Exec(ctx, "SELECT 1 FROM sessions WHERE id = $1 FOR NO KEY UPDATE", p.SessionID); err != nil {
			return fmt.Errorf("compact session %s: %w", p.SessionID, err)
		}
		// The replaced messages are those the archive froze up to the
		// cut: no other step ran since (the lock), and appends only add
		// messages after it. The summary takes the cut's seq.
		tag, err := tx.Exec(ctx, "DELETE FROM session_messages WHERE session_id = $1 AND seq <= $2", p.SessionID, a.CutSeq)
		if err != nil {
			return fmt.Errorf("compact session %s: %w", p.SessionID, err)
		}
		removed := tag.RowsAffected()
		m := *p.Summary
		m.SessionID, m.Seq, m.CreatedAt = p.SessionID, a.CutSeq, now
		if m.ID == "" {
			m.ID = ids.New("msg")
		}
		if err := insertMessages(ctx, tx, []*store.Message{&m}); err != nil {
			return err
		}
		sess, err := scanSession(tx.QueryRow(ctx, "UPDATE sessions SET message_count = message_count - $2 + 1, compactions = compactions + 1, summary_archive = $3, compacted_at = $4, revision = revision + 1, updated_at = $4 WHERE id = $1 RETURNING "+sessionColumns,
			p.SessionID, removed, p.ArchiveID, now))
		if err != nil {
			return fmt.Errorf("compact session %s: %w", p.SessionID, err)
		}
		if err := settleArchive(ctx, tx, a, store.ArchiveSucceeded, "", now); err != nil {
			return err
		}
		out = &store.CompactionResult{Session: sess, Archive: a, Compacted: removed}
		out.Pruned, err = pruneExcess(ctx, tx, p.SessionID, p.ArchiveID, p.MaxArchives)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) FailCompaction(ctx context.Context, p store.FailCompactionParams) (*store.CompactionResult, error) {
	var out *store.CompactionResult
	err := s.write(ctx, "session.compact.fail", func(tx pgx.Tx) error {
		now := store.Millis(store.At(p.Now))
		a, err := preparedArchive(ctx, tx, p.SessionID, p.ArchiveID)
		if err != nil {
			return err
		}
		if err := settleArchive(ctx, tx, a, store.ArchiveFailed, p.Reason, now); err != nil {
			return err
		}
		sess, err := getSession(ctx, tx, p.SessionID)
		if err != nil {
			return err
		}
		out = &store.CompactionResult{Session: sess, Archive: a}
		out.Pruned, err = pruneExcess(ctx, tx, p.SessionID, p.ArchiveID, p.MaxArchives)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// settleArchive records a's end inside tx, and on a.
func settleArchive(ctx context.Context, tx pgx.Tx, a *store.Archive, status store.ArchiveStatus, reason string, now time.Time) error {
	if _, err := tx.Exec(ctx, "UPDATE session_archives SET status = $2, error = $3, settled_at = $4 WHERE id = $1", a.ID, status, reason, now); err != nil {
		return fmt.Errorf("settle compaction %s: %w", a.ID, err)
	}
	a.Status, a.Error, a.SettledAt = status, reason, now
	return nil
}

func (s *Store) ListArchives(ctx context.Context, sessionID string) ([]*store.Archive, error) {
	if _, err := getSession(ctx, s.pool, sessionID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, "SELECT "+archiveColumns+" FROM session_archives WHERE session_id = $1 ORDER BY n DESC", sessionID)
	if err != nil {
		return nil, fmt.Errorf("list archives of session %s: %w", sessionID, err)
	}
	out, err := collect(rows, func(row pgx.Row) (*store.Archive, error) { return scanArchive(row) })
	if err != nil {
		return nil, fmt.Errorf("list archives of session %s: %w", sessionID, err)
	}
	return out, nil
}

// scanArchive reads archiveColumns, then extra.
func scanArchive(row pgx.Row, extra ...any) (*store.Archive, error) {
	var (
		a       store.Archive
		settled *time.Time
	)
	dest := append([]any{&a.ID, &a.SessionID, &a.Status, &a.CutSeq, &a.MessageCount, &a.Digest, &a.Error, &a.CreatedAt, &settled}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	a.CreatedAt = a.CreatedAt.UTC()
	if settled != nil {
		a.SettledAt = settled.UTC()
	}
	return &a, nil
}
