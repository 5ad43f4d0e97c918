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

// An append updates the session's row, which hands out its sequence
// numbers under the row's lock: appends from many hosts take turns there
// and commit in sequence order, and nothing reads the old messages.

const sessionColumns = "id, title, parent_id, message_count, last_seq, compactions, summary_archive, compacted_at, revision, created_at, updated_at"

const messageColumns = "session_id, seq, id, role, parts, metadata, created_at"

func (s *Store) CreateSession(ctx context.Context, sess *store.Session) (bool, error) {
	var (
		created bool
		out     *store.Session
	)
	err := s.write(ctx, "session.create", func(tx pgx.Tx) error {
		if sess.ParentID != "" {
			// The parent stays until this commits (a delete waits).
			var one int
			err := tx.QueryRow(ctx, "SELECT 1 FROM sessions WHERE id = $1 FOR KEY SHARE", sess.ParentID).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				err = &store.NotFoundError{Kind: "session", ID: sess.ParentID}
			}
			if err != nil {
				return fmt.Errorf("create session %s: parent: %w", sess.ID, err)
			}
		}
		now := store.Millis(store.At(sess.CreatedAt))
		tag, err := tx.Exec(ctx, "INSERT INTO sessions (id, title, parent_id, revision, created_at, updated_at) VALUES ($1, $2, $3, 1, $4, $4) ON CONFLICT (id) DO NOTHING",
			sess.ID, sess.Title, sess.ParentID, now)
		if err != nil {
			return fmt.Errorf("create session %s: %w", sess.ID, err)
		}
		created = tag.RowsAffected() == 1
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
	return getSession(ctx, s.pool, id)
}

func getSession(ctx context.Context, q querier, id string) (*store.Session, error) {
	sess, err := scanSession(q.QueryRow(ctx, "SELECT "+sessionColumns+" FROM sessions WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "session", ID: id}
	}
	if err != nil {
		return nil, fmt.Errorf("get session %s: %w", id, err)
	}
	return sess, nil
}

func scanSession(row pgx.Row) (*store.Session, error) {
	var (
		sess      store.Session
		compacted *time.Time
	)
	if err := row.Scan(&sess.ID, &sess.Title, &sess.ParentID, &sess.MessageCount, &sess.LastSeq, &sess.Summary.Compactions, &sess.Summary.ArchiveID, &compacted, &sess.Revision, &sess.CreatedAt, &sess.UpdatedAt); err != nil {
		return nil, err
	}
	if compacted != nil {
		sess.Summary.CompactedAt = compacted.UTC()
	}
	sess.CreatedAt, sess.UpdatedAt = sess.CreatedAt.UTC(), sess.UpdatedAt.UTC()
	return &sess, nil
}

func (s *Store) ListSessions(ctx context.Context, p store.ListSessionsParams) ([]*store.Session, store.SessionCursor, error) {
	limit := max(p.Limit, 1)
	var (
		rows pgx.Rows
		err  error
	)
	if p.After.IsZero() {
		rows, err = s.pool.Query(ctx, "SELECT "+sessionColumns+" FROM sessions ORDER BY created_at DESC, id DESC LIMIT $1", limit+1)
	} else {
		rows, err = s.pool.Query(ctx, "SELECT "+sessionColumns+" FROM sessions WHERE (created_at, id) < ($1, $2) ORDER BY created_at DESC, id DESC LIMIT $3",
			p.After.CreatedAt, p.After.ID, limit+1)
	}
	if err != nil {
		return nil, store.SessionCursor{}, fmt.Errorf("list sessions: %w", err)
	}
	out, err := collect(rows, scanSession)
	if err != nil {
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
	return s.write(ctx, "session.delete", func(tx pgx.Tx) error {
		// Messages and archives go with it (ON DELETE CASCADE).
		tag, err := tx.Exec(ctx, "DELETE FROM sessions WHERE id = $1", id)
		if err != nil {
			return fmt.Errorf("delete session %s: %w", id, err)
		}
		if tag.RowsAffected() == 0 {
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
	err := s.write(ctx, "session.append", func(tx pgx.Tx) error {
		now := store.AppendTime(msgs)
		n := int64(len(msgs))
		sess, err := scanSession(tx.QueryRow(ctx, "UPDATE sessions SET last_seq = last_seq + $2, message_count = message_count + $2, revision = revision + 1, updated_at = $3 WHERE id = $1 RETURNING "+sessionColumns,
			sessionID, n, now))
		if errors.Is(err, pgx.ErrNoRows) {
			return &store.NotFoundError{Kind: "session", ID: sessionID}
		}
		if err != nil {
			return fmt.Errorf("append to session %s: %w", sessionID, err)
		}
		first := sess.LastSeq - n + 1
		for i, m := range msgs {
			m.SessionID, m.Seq, m.CreatedAt = sessionID, first+int64(i), now
			if m.ID == "" {
				m.ID = ids.New("msg")
			}
		}
		if err := insertMessages(ctx, tx, msgs); err != nil {
			return err
		}
		out = sess
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// insertMessages adds msgs (of one session, filled) in one statement; an
// id (or sequence number) taken, in the session or twice among msgs,
// refuses them all with an error wrapping ErrExists.
func insertMessages(ctx context.Context, tx pgx.Tx, msgs []*store.Message) error {
	n := len(msgs)
	var (
		sessions, msgIDs, roles, parts, metadata = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		seqs                                     = make([]int64, n)
		created                                  = make([]time.Time, n)
	)
	for i, m := range msgs {
		if len(m.Metadata) == 0 {
			m.Metadata = json.RawMessage("{}")
		}
		sessions[i], seqs[i], msgIDs[i], roles[i] = m.SessionID, m.Seq, m.ID, string(m.Role)
		parts[i], metadata[i], created[i] = string(m.Parts), string(m.Metadata), m.CreatedAt
	}
	tag, err := tx.Exec(ctx, "INSERT INTO session_messages ("+messageColumns+") SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[]) ON CONFLICT DO NOTHING",
		sessions, seqs, msgIDs, roles, parts, metadata, created)
	if err != nil {
		return fmt.Errorf("insert messages into session %s: %w", msgs[0].SessionID, err)
	}
	if tag.RowsAffected() != int64(n) {
		return fmt.Errorf("append to session %s: a message id is taken: %w", msgs[0].SessionID, store.ErrExists)
	}
	return nil
}

func (s *Store) ListMessages(ctx context.Context, p store.ListMessagesParams) ([]*store.Message, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+messageColumns+" FROM session_messages WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3", p.SessionID, p.AfterSeq, max(p.Limit, 1))
	if err != nil {
		return nil, fmt.Errorf("read messages of session %s: %w", p.SessionID, err)
	}
	out, err := collect(rows, func(row pgx.Row) (*store.Message, error) {
		var m store.Message
		if err := scanMessage(row, &m); err != nil {
			return nil, err
		}
		return &m, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read messages of session %s: %w", p.SessionID, err)
	}
	if len(out) == 0 {
		if _, err := getSession(ctx, s.pool, p.SessionID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scanMessage reads messageColumns into m.
func scanMessage(row pgx.Row, m *store.Message) error {
	var parts, metadata string
	if err := row.Scan(&m.SessionID, &m.Seq, &m.ID, &m.Role, &parts, &metadata, &m.CreatedAt); err != nil {
		return err
	}
	m.Parts, m.Metadata, m.CreatedAt = json.RawMessage(parts), json.RawMessage(metadata), m.CreatedAt.UTC()
	return nil
}
