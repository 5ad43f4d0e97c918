package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

const sessionColumns = "id, title, parent_id, message_count, last_seq, compactions, summary_archive, compacted_at, revision, created_at, updated_at"

const messageColumns = "session_id, seq, id, role, parts, metadata, created_at"

// archiveColumns leaves out state, which only GetArchive reads.
const archiveColumns = "id, session_id, status, cut_seq, message_count, digest, error, created_at, settled_at"

func (s *Store) CreateSession(ctx context.Context, sess *store.Session) (bool, error) {
	var (
		created bool
		out     *store.Session
	)
	err := s.write(ctx, "session.create", func(tx *sql.Tx) error {
		created, out = false, nil
		if sess.ParentID != "" {
			if _, err := getSession(ctx, tx, sess.ParentID); err != nil {
				return fmt.Errorf("create session %s: parent: %w", sess.ID, err)
			}
		}
		now := store.Millis(store.At(sess.CreatedAt))
		res, err := tx.ExecContext(ctx, "INSERT INTO sessions (id, title, parent_id, revision, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?) ON CONFLICT (id) DO NOTHING",
			sess.ID, sess.Title, sess.ParentID, now.UnixMilli(), now.UnixMilli())
		if err != nil {
			return fmt.Errorf("create session %s: %w", sess.ID, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("create session %s: %w", sess.ID, err)
		}
		created = n == 1
		out, err = getSession(ctx, tx, sess.ID)
		return err
	})
	if err != nil {
		return false, err
	}
	*sess = *out
	return created, nil
}

func (s *Store) GetSession(ctx context.Context, id string) (*store.Session, error) {
	return getSession(ctx, s.r, id)
}

// querier is *sql.DB or *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func getSession(ctx context.Context, q querier, id string) (*store.Session, error) {
	sess, err := scanSession(q.QueryRowContext(ctx, "SELECT "+sessionColumns+" FROM sessions WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "session", ID: id}
	}
	if err != nil {
		return nil, fmt.Errorf("get session %s: %w", id, err)
	}
	return sess, nil
}

func scanSession(row rowScanner) (*store.Session, error) {
	var (
		sess                        store.Session
		compacted, created, updated int64
	)
	if err := row.Scan(&sess.ID, &sess.Title, &sess.ParentID, &sess.MessageCount, &sess.LastSeq, &sess.Summary.Compactions, &sess.Summary.ArchiveID, &compacted, &sess.Revision, &created, &updated); err != nil {
		return nil, err
	}
	if compacted != 0 {
		sess.Summary.CompactedAt = millisTime(compacted)
	}
	sess.CreatedAt = millisTime(created)
	sess.UpdatedAt = millisTime(updated)
	return &sess, nil
}

func (s *Store) ListSessions(ctx context.Context, p store.ListSessionsParams) ([]*store.Session, store.SessionCursor, error) {
	limit := max(p.Limit, 1)
	var (
		rows *sql.Rows
		err  error
	)
	if p.After.IsZero() {
		rows, err = s.r.QueryContext(ctx, "SELECT "+sessionColumns+" FROM sessions ORDER BY created_at DESC, id DESC LIMIT ?", limit+1)
	} else {
		rows, err = s.r.QueryContext(ctx, "SELECT "+sessionColumns+" FROM sessions WHERE (created_at, id) < (?, ?) ORDER BY created_at DESC, id DESC LIMIT ?",
			p.After.CreatedAt.UnixMilli(), p.After.ID, limit+1)
	}
	if err != nil {
		return nil, store.SessionCursor{}, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []*store.Session
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, store.SessionCursor{}, fmt.Errorf("list sessions: %w", err)
		}
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, store.SessionCursor{}, fmt.Errorf("list sessions: %w", err)
	}
	var next store.SessionCursor
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = store.SessionCursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	return out, next, nil
}

func (s *Store) DeleteSession(ctx context.Context, id string) error {
	return s.write(ctx, "session.delete", func(tx *sql.Tx) error {
		// Messages and archives go with it (ON DELETE CASCADE).
		res, err := tx.ExecContext(ctx, "DELETE FROM sessions WHERE id = ?", id)
		if err != nil {
			return fmt.Errorf("delete session %s: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("delete session %s: %w", id, err)
		} else if n == 0 {
			return &store.NotFoundError{Kind: "session", ID: id}
		}
		return nil
	})
}

func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs []*store.Message) (*store.Session, error) {
	if err := store.CheckAppend(sessionID, msgs); err != nil {
		return nil, err
	}
	var out *store.Session
	err := s.write(ctx, "session.append", func(tx *sql.Tx) error {
		now := store.AppendTime(msgs)
		n := int64(len(msgs))
		// One indexed row update reserves the sequence numbers; the
		// inserts below touch only the (session_id, seq) and
		// (session_id, id) indexes: nothing here reads the old messages.
		sess, err := scanSession(tx.QueryRowContext(ctx, "UPDATE sessions SET last_seq = last_seq + ?, message_count = message_count + ?, revision = revision + 1, updated_at = ? WHERE id = ? RETURNING "+sessionColumns,
			n, n, now.UnixMilli(), sessionID))
		if errors.Is(err, sql.ErrNoRows) {
			return &store.NotFoundError{Kind: "session", ID: sessionID}
		}
		if err != nil {
			return fmt.Errorf("append to session %s: %w", sessionID, err)
		}
		first := sess.LastSeq - n + 1
		stmt, err := s.txStmt(ctx, tx, qInsertMessage)
		if err != nil {
			return fmt.Errorf("append to session %s: %w", sessionID, err)
		}
		for i, m := range msgs {
			m.SessionID, m.Seq, m.CreatedAt = sessionID, first+int64(i), now
			if m.ID == "" {
				m.ID = ids.New("msg")
			}
			if err := insertMessage(ctx, stmt, m); err != nil {
				return err
			}
		}
		out = sess
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

var qInsertMessage = prepared("INSERT INTO session_messages (" + messageColumns + ") VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING")

// insertMessage adds m with stmt, qInsertMessage prepared for the
// transaction; a taken id (or sequence number) wraps ErrExists.
func insertMessage(ctx context.Context, stmt *sql.Stmt, m *store.Message) error {
	if len(m.Metadata) == 0 {
		m.Metadata = json.RawMessage("{}")
	}
	args := []any{m.SessionID, m.Seq, m.ID, string(m.Role), string(m.Parts), string(m.Metadata), m.CreatedAt.UnixMilli()}
	res, err := stmt.ExecContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("insert message %s into session %s: %w", m.ID, m.SessionID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("insert message %s into session %s: %w", m.ID, m.SessionID, err)
	} else if n == 0 {
		return fmt.Errorf("append to session %s: message id %s: %w", m.SessionID, m.ID, store.ErrExists)
	}
	return nil
}

func (s *Store) ListMessages(ctx context.Context, p store.ListMessagesParams) ([]*store.Message, error) {
	out, err := listMessages(ctx, s.r, p.SessionID, p.AfterSeq, max(p.Limit, 1))
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		if _, err := getSession(ctx, s.r, p.SessionID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// listMessages reads messages with seq > after in order; limit < 0 reads
// them all.
func listMessages(ctx context.Context, q querier, sessionID string, after int64, limit int) ([]*store.Message, error) {
	// Messages below first_seq were replaced by a compaction and are
	// being deleted in slices.
	rows, err := q.QueryContext(ctx, "SELECT "+messageColumns+" FROM session_messages WHERE session_id = ? AND seq > ? AND seq >= (SELECT first_seq FROM sessions WHERE id = ?) ORDER BY seq LIMIT ?", sessionID, after, sessionID, limit)
	if err != nil {
		return nil, fmt.Errorf("read messages of session %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []*store.Message
	for rows.Next() {
		var (
			m               store.Message
			parts, metadata string
			created         int64
		)
		if err := rows.Scan(&m.SessionID, &m.Seq, &m.ID, &m.Role, &parts, &metadata, &created); err != nil {
			return nil, fmt.Errorf("read messages of session %s: %w", sessionID, err)
		}
		m.Parts, m.Metadata = json.RawMessage(parts), json.RawMessage(metadata)
		m.CreatedAt = millisTime(created)
		out = append(out, &m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read messages of session %s: %w", sessionID, err)
	}
	return out, nil
}
