package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn/store"
)

func userText(text string) *store.Message {
	parts, _ := json.Marshal([]map[string]string{{"type": "text", "text": text}})
	return &store.Message{Role: store.RoleUser, Parts: parts}
}

// TestHostsCompactWhileAppending: one host compacts a session again and
// again while another appends to it. Every append survives (kept, or in
// the archive of the compaction that replaced it), every archive decodes
// with its digest, and the session's count matches its messages.
func TestHostsCompactWhileAppending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hosts := peers(t, 2)
	if _, err := hosts[0].CreateSession(ctx, &store.Session{ID: "ses_k"}); err != nil {
		t.Fatal(err)
	}
	const appends, compactions = 80, 6
	var appended atomic.Int64
	onEachHost(t, hosts, func(s *Store, h int) error {
		if h == 1 {
			for i := range appends {
				if _, err := s.AppendMessages(ctx, "ses_k", []*store.Message{userText(fmt.Sprintf("m%d", i))}); err != nil {
					return err
				}
				appended.Add(1)
			}
			return nil
		}
		for c := 0; c < compactions; {
			id := fmt.Sprintf("arc_%d", c)
			_, err := s.PrepareCompaction(ctx, store.PrepareCompactionParams{SessionID: "ses_k", ArchiveID: id, KeepLast: 3, MaxArchives: 0})
			if errors.As(err, new(*store.NothingToCompactError)) {
				if appended.Load() == appends {
					return fmt.Errorf("only %d compactions before the appends ended", c)
				}
				continue
			}
			if err != nil {
				return err
			}
			if _, err := s.CommitCompaction(ctx, store.CommitCompactionParams{SessionID: "ses_k", ArchiveID: id, Summary: userText("summary " + id)}); err != nil {
				return err
			}
			c++
		}
		return nil
	})
	seen := map[string]bool{}
	archives, err := hosts[1].ListArchives(ctx, "ses_k")
	if err != nil || len(archives) != compactions {
		t.Fatalf("%d archives, %v", len(archives), err)
	}
	for _, head := range archives {
		a, err := hosts[1].GetArchive(ctx, head.ID)
		if err != nil {
			t.Fatal(err)
		}
		st, err := a.Decode()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range st.Messages {
			seen[string(m.Parts)] = true
		}
	}
	msgs, err := hosts[1].ListMessages(ctx, store.ListMessagesParams{SessionID: "ses_k", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		seen[string(m.Parts)] = true
	}
	for i := range appends {
		if !seen[string(userText(fmt.Sprintf("m%d", i)).Parts)] {
			t.Errorf("message m%d is neither kept nor archived", i)
		}
	}
	sess, err := hosts[0].GetSession(ctx, "ses_k")
	if err != nil || sess.MessageCount != int64(len(msgs)) || sess.LastSeq != appends || sess.Summary.Compactions != compactions {
		t.Fatalf("session %+v, %v; %d messages listed", sess, err, len(msgs))
	}
}

// TestArchivesAreFrozen: the database refuses to rewrite what an archive
// froze; only its status, error and settled time change.
func TestArchivesAreFrozen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := peers(t, 1)[0]
	if _, err := s.CreateSession(ctx, &store.Session{ID: "ses_f"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, "ses_f", []*store.Message{userText("a"), userText("b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PrepareCompaction(ctx, store.PrepareCompactionParams{SessionID: "ses_f", ArchiveID: "arc_f", KeepLast: 1}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"UPDATE session_archives SET digest = 'x' WHERE id = 'arc_f'",
		"UPDATE session_archives SET head = '{}' WHERE id = 'arc_f'",
		"UPDATE session_archive_messages SET parts = '[]'",
	} {
		if _, err := s.Pool().Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "frozen") {
			t.Errorf("%s: %v, want a refusal", q, err)
		}
	}
	if _, err := s.FailCompaction(ctx, store.FailCompactionParams{SessionID: "ses_f", ArchiveID: "arc_f", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	a, err := s.GetArchive(ctx, "arc_f")
	if err != nil || a.Status != store.ArchiveFailed {
		t.Fatalf("archive %+v, %v", a, err)
	}
	if _, err := a.Decode(); err != nil {
		t.Fatal(err)
	}
}
