package postgres

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/store"
)

// An archive's messages are rows (session_archive_messages); its digest
// is taken over the store.ArchiveState JSON written one message at a time
// (store.WriteArchiveState), and GetArchive writes the same JSON again
// from the rows. So compacting a session of any length holds one message
// in memory, not all of them.

// digestMessages returns the digest of the ArchiveState of h with the
// messages query returns (its columns messageColumns, in order), and how
// many there are.
func digestMessages(ctx context.Context, q querier, h archiveHead, query string, args ...any) (digest string, messages int64, err error) {
	sum := sha256.New()
	w := bufio.NewWriterSize(sum, 64<<10)
	err = store.WriteArchiveState(w, h.Session, h.Memory, func(yield func(*store.Message) error) error {
		return eachMessage(ctx, q, query, args, func(m *store.Message) error {
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

// eachMessage calls fn for every message query returns, one at a time;
// fn must not keep m.
func eachMessage(ctx context.Context, q querier, query string, args []any, fn func(m *store.Message) error) error {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var m store.Message
	for rows.Next() {
		if err := scanMessage(rows, &m); err != nil {
			return err
		}
		if err := fn(&m); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *Store) GetArchive(ctx context.Context, id string) (*store.Archive, error) {
	// One snapshot: the rows of an archive pruned meanwhile are never
	// mixed with its head.
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("get archive %s: %w", id, err)
	}
	defer tx.Rollback(ctx)
	var (
		n    int64
		head string
	)
	a, err := scanArchive(tx.QueryRow(ctx, "SELECT "+archiveColumns+", n, head FROM session_archives WHERE id = $1", id), &n, &head)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "archive", ID: id}
	}
	if err != nil {
		return nil, fmt.Errorf("get archive %s: %w", id, err)
	}
	var h archiveHead
	if err := json.Unmarshal([]byte(head), &h); err != nil {
		return nil, fmt.Errorf("get archive %s: read its head: %w", id, err)
	}
	var buf bytes.Buffer
	err = store.WriteArchiveState(&buf, h.Session, h.Memory, func(yield func(*store.Message) error) error {
		return eachMessage(ctx, tx, "SELECT "+messageColumns+" FROM session_archive_messages WHERE archive_n = $1 ORDER BY seq", []any{n}, yield)
	})
	if err != nil {
		return nil, fmt.Errorf("get archive %s: read its messages: %w", id, err)
	}
	a.State = buf.Bytes()
	return a, nil
}
