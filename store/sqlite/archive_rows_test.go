package sqlite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// TestWriteStateIsJSONMarshal: the streamed state is byte for byte what
// json.Marshal gives, so digests of old and new archives agree in kind.
func TestWriteStateIsJSONMarshal(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 2, 12, 0, 0, 123e6, time.UTC)
	sess := store.Session{ID: "ses_x", Title: "a <b> & c", MessageCount: 2, LastSeq: 2, CreatedAt: at, UpdatedAt: at}
	msgs := []store.Message{
		{SessionID: "ses_x", ID: "m1", Seq: 1, Role: store.RoleUser, Parts: json.RawMessage(`[ {"type": "text", "text": "<hi> & ✓"} ]`), Metadata: json.RawMessage(`{}`), CreatedAt: at},
		{SessionID: "ses_x", ID: "m2", Seq: 2, Role: store.RoleAssistant, Parts: json.RawMessage(`[{"type":"text","text":"yo"}]`), Metadata: json.RawMessage(`{"k": 1}`), CreatedAt: at},
	}
	for name, c := range map[string]struct {
		memory string
		msgs   []store.Message
	}{
		"with memory":    {memory: "summary <with> \"quotes\"", msgs: msgs},
		"without memory": {msgs: msgs},
		"no messages":    {msgs: []store.Message{}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want, err := json.Marshal(store.ArchiveState{Session: sess, Messages: c.msgs, Memory: c.memory})
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			err = writeState(&got, archiveHead{Session: sess, Memory: c.memory}, func(yield func(*store.Message) error) error {
				for i := range c.msgs {
					if err := yield(&c.msgs[i]); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("streamed state\n%s\nwant\n%s", got.Bytes(), want)
			}
		})
	}
}

// TestArchiveRowsGoWithTheirArchive: pruned archives and deleted sessions
// take their frozen messages with them, and a kept archive decodes.
func TestArchiveRowsGoWithTheirArchive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storeWithSession(t, "ses_r")
	rows := func() (n int64) {
		t.Helper()
		if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM session_archive_messages").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var last *store.Archive
	for i := range 3 {
		msgs := make([]*store.Message, 5)
		for j := range msgs {
			msgs[j] = &store.Message{ID: fmt.Sprintf("m%d_%d", i, j), Role: store.RoleUser, Parts: json.RawMessage(`[{"type":"text","text":"hi"}]`)}
		}
		if _, err := s.AppendMessages(ctx, "ses_r", msgs); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("arc_%d", i)
		prep, err := s.PrepareCompaction(ctx, store.PrepareCompactionParams{SessionID: "ses_r", ArchiveID: id, KeepLast: 1, MaxArchives: 1, Memory: "memo"})
		if err != nil {
			t.Fatal(err)
		}
		sum := &store.Message{Role: store.RoleSystem, Parts: json.RawMessage(`[{"type":"text","text":"sum"}]`)}
		if _, err := s.CommitCompaction(ctx, store.CommitCompactionParams{SessionID: "ses_r", ArchiveID: id, MaxArchives: 1, Summary: sum}); err != nil {
			t.Fatal(err)
		}
		last = prep.Archive
	}
	if got := rows(); got != last.MessageCount {
		t.Fatalf("%d archived rows with one archive of %d messages kept", got, last.MessageCount)
	}
	a, err := s.GetArchive(ctx, last.ID)
	if err != nil {
		t.Fatal(err)
	}
	st, err := a.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(st.Messages)) != last.MessageCount || st.Memory != "memo" {
		t.Fatalf("decoded %d messages, memory %q", len(st.Messages), st.Memory)
	}
	if err := s.DeleteSession(ctx, "ses_r"); err != nil {
		t.Fatal(err)
	}
	if got := rows(); got != 0 {
		t.Fatalf("%d archived rows left after the session was deleted", got)
	}
}

// TestArchiveWrittenBeforeRowsStillReads: an archive from before
// migration 0005 holds its messages in state and reads as it was.
func TestArchiveWrittenBeforeRowsStillReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storeWithSession(t, "ses_old")
	sess, err := s.GetSession(ctx, "ses_old")
	if err != nil {
		t.Fatal(err)
	}
	sess.MessageCount = 1
	at := time.UnixMilli(1772452800000).UTC()
	state, err := json.Marshal(store.ArchiveState{Session: *sess, Messages: []store.Message{
		{SessionID: "ses_old", ID: "m1", Seq: 1, Role: store.RoleUser, Parts: json.RawMessage(`[]`), Metadata: json.RawMessage(`{}`), CreatedAt: at},
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.w.ExecContext(ctx, "INSERT INTO session_archives (id, session_id, status, cut_seq, message_count, digest, state, created_at) VALUES ('arc_old', 'ses_old', 'failed', 1, 1, ?, ?, 1)",
		store.DigestState(state), string(state))
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.GetArchive(ctx, "arc_old")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := a.Decode(); err != nil || len(st.Messages) != 1 {
		t.Fatalf("Decode = %+v, %v", st, err)
	}
}

// storeWithSession opens a store holding one empty session, id.
func storeWithSession(t *testing.T, id string) *Store {
	t.Helper()
	s := newTestStore(t)
	t.Cleanup(func() { s.Close() })
	if _, err := s.CreateSession(context.Background(), &store.Session{ID: id}); err != nil {
		t.Fatal(err)
	}
	return s
}
