package sqlite

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"github.com/cairnhq/cairn/store"
)

// An archive freezes its session's messages as rows of
// session_archive_messages, copied inside SQLite; its digest is taken over
// the store.ArchiveState JSON written one message at a time, and
// GetArchive writes the same JSON again from the rows. So compacting a
// session of any length holds one message in memory, not all of them.

// archiveHead is the state column of an archive whose messages are rows:
// its ArchiveState without the messages.
type archiveHead struct {
	Session store.Session `json:"session"`
	Memory  string        `json:"memory,omitempty"`
}

// digestArchive reads archive n back from its rows, on the read pool (no
// write lock), and returns the digest of its ArchiveState and how many
// messages it holds.
func (s *Store) digestArchive(ctx context.Context, n int64, head []byte) (digest string, messages int64, err error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return "", 0, err
	}
	defer tx.Rollback()
	var h archiveHead
	if err := json.Unmarshal(head, &h); err != nil {
		return "", 0, fmt.Errorf("read archive head: %w", err)
	}
	sum := sha256.New()
	w := bufio.NewWriterSize(sum, 64<<10)
	err = writeState(w, h, func(yield func(*store.Message) error) error {
		return eachMessage(ctx, tx, "SELECT "+messageColumns+" FROM session_archive_messages WHERE archive_n = ? ORDER BY seq", n, func(m *store.Message) error {
			messages++
			return yield(m)
		})
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(sum.Sum(nil)), messages, nil
}

// archiveState writes back the full state of archive n from its head and
// rows: the bytes its digest was taken over.
func archiveState(ctx context.Context, tx *sql.Tx, n int64, head []byte) (json.RawMessage, error) {
	var h archiveHead
	if err := json.Unmarshal(head, &h); err != nil {
		return nil, fmt.Errorf("read archive head: %w", err)
	}
	var buf bytes.Buffer
	err := writeState(&buf, h, func(yield func(*store.Message) error) error {
		return eachMessage(ctx, tx, "SELECT "+messageColumns+" FROM session_archive_messages WHERE archive_n = ? ORDER BY seq", n, yield)
	})
	if err != nil {
		return nil, fmt.Errorf("read archived messages: %w", err)
	}
	return buf.Bytes(), nil
}

// writeState writes the JSON of store.ArchiveState{h.Session, messages,
// h.Memory}, the very bytes json.Marshal gives, taking the messages from
// each as they come.
func writeState(w io.Writer, h archiveHead, each func(yield func(*store.Message) error) error) error {
	return store.WriteArchiveState(w, h.Session, h.Memory, each)
}

// eachMessage calls fn for every message query returns (its columns
// messageColumns), one at a time; fn must not keep m.
func eachMessage(ctx context.Context, q querier, query string, arg any, fn func(m *store.Message) error) error {
	rows, err := q.QueryContext(ctx, query, arg)
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		m               store.Message
		parts, metadata []byte
		created         int64
	)
	for rows.Next() {
		if err := rows.Scan(&m.SessionID, &m.Seq, &m.ID, &m.Role, &parts, &metadata, &created); err != nil {
			return err
		}
		m.Parts, m.Metadata, m.CreatedAt = parts, metadata, millisTime(created)
		if err := fn(&m); err != nil {
			return err
		}
	}
	return rows.Err()
}
