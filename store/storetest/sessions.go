package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// textMsg is a one-part text message.
func textMsg(role store.Role, text string) *store.Message {
	parts, _ := json.Marshal([]map[string]string{{"type": "text", "text": text}})
	return &store.Message{Role: role, Parts: parts}
}

// textOf returns the text of a textMsg.
func textOf(t *testing.T, m *store.Message) string {
	t.Helper()
	var parts []struct{ Text string }
	if err := json.Unmarshal(m.Parts, &parts); err != nil || len(parts) != 1 {
		t.Fatalf("message %s parts %s: %v", m.ID, m.Parts, err)
	}
	return parts[0].Text
}

func createSession(t *testing.T, s store.Store, id string) *store.Session {
	t.Helper()
	sess := &store.Session{ID: id}
	if _, err := s.CreateSession(context.Background(), sess); err != nil {
		t.Fatal(err)
	}
	return sess
}

func appendTexts(t *testing.T, s store.Store, id string, texts ...string) {
	t.Helper()
	msgs := make([]*store.Message, len(texts))
	for i, text := range texts {
		msgs[i] = textMsg(store.RoleUser, text)
	}
	if _, err := s.AppendMessages(context.Background(), id, msgs); err != nil {
		t.Fatal(err)
	}
}

func allMessages(t *testing.T, s store.Store, id string) []*store.Message {
	t.Helper()
	msgs, err := s.ListMessages(context.Background(), store.ListMessagesParams{SessionID: id, Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// sessT0 is a fixed instant session writes that are given a time use.
var sessT0 = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

func testSessions(t *testing.T, newStore NewFunc) {
	runCases(t, newStore, []storeCase{
		{"create is idempotent", testCreateSessionIdempotent},
		{"parent must exist", testSessionParent},
		{"append assigns sequence numbers and pages read in order", testAppendAndRead},
		{"bad appends store nothing", testBadAppends},
		{"concurrent appends keep every message once", testConcurrentAppends},
		{"list newest first with a cursor", testListSessions},
		{"compaction replaces old messages atomically and archives the old state", testCompaction},
		{"nothing to compact", testNothingToCompact},
		{"a second compaction sees only what the first left", testCompactTwice},
		{"abandoned attempts are interrupted and retention keeps the newest", testInterruptAndRetention},
		{"delete removes messages and archives", testDeleteSession},
		{"records are copies", testSessionCopies},
	})
}

func testCreateSessionIdempotent(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := &store.Session{ID: "ses_a", Title: "first", CreatedAt: sessT0}
	created, err := s.CreateSession(ctx, a)
	if err != nil || !created {
		t.Fatalf("CreateSession = %v, %v; want created", created, err)
	}
	if a.Revision != 1 || !a.CreatedAt.Equal(sessT0) || !a.UpdatedAt.Equal(sessT0) || a.MessageCount != 0 || a.Title != "first" {
		t.Fatalf("created session %+v", a)
	}
	appendTexts(t, s, "ses_a", "hello")
	again := &store.Session{ID: "ses_a", Title: "second"}
	created, err = s.CreateSession(ctx, again)
	if err != nil || created {
		t.Fatalf("second CreateSession = %v, %v; want existing", created, err)
	}
	if again.Title != "first" || again.MessageCount != 1 || again.Revision != 2 {
		t.Fatalf("second create returned %+v; want the existing session, untouched", again)
	}
	got, err := s.GetSession(ctx, "ses_a")
	if err != nil || got.Title != "first" || got.MessageCount != 1 {
		t.Fatalf("GetSession = %+v, %v", got, err)
	}
	if c, _ := s.Counts(ctx); c.Sessions != 1 {
		t.Fatalf("Counts().Sessions = %d, want 1", c.Sessions)
	}
}

func testSessionParent(t *testing.T, s store.Store) {
	ctx := context.Background()
	if _, err := s.CreateSession(ctx, &store.Session{ID: "ses_child", ParentID: "ses_nope"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("create with a missing parent: %v, want ErrNotFound", err)
	}
	if _, err := s.GetSession(ctx, "ses_child"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused create stored the session: %v", err)
	}
	createSession(t, s, "ses_parent")
	child := &store.Session{ID: "ses_child", ParentID: "ses_parent"}
	if _, err := s.CreateSession(ctx, child); err != nil || child.ParentID != "ses_parent" {
		t.Fatalf("create child: %+v, %v", child, err)
	}
}

func testAppendAndRead(t *testing.T, s store.Store) {
	ctx := context.Background()
	createSession(t, s, "ses_p")
	msgs := []*store.Message{textMsg(store.RoleUser, "m1"), textMsg(store.RoleAssistant, "m2"), {ID: "mine", Role: store.RoleTool, Parts: json.RawMessage(`[{"type":"tool_result","content":"ok"}]`), Metadata: json.RawMessage(`{"k":1}`)}}
	sess, err := s.AppendMessages(ctx, "ses_p", msgs)
	if err != nil {
		t.Fatal(err)
	}
	if sess.MessageCount != 3 || sess.LastSeq != 3 || sess.Revision != 2 {
		t.Fatalf("session after append: %+v", sess)
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) || m.ID == "" || m.SessionID != "ses_p" || m.CreatedAt.IsZero() {
			t.Fatalf("message %d not filled: %+v", i, m)
		}
	}
	if msgs[2].ID != "mine" || string(msgs[0].Metadata) != "{}" {
		t.Fatalf("ids/metadata: %q %s", msgs[2].ID, msgs[0].Metadata)
	}
	for i := 4; i <= 10; i++ {
		appendTexts(t, s, "ses_p", fmt.Sprintf("m%d", i))
	}
	var got []string
	var after int64
	for {
		page, err := s.ListMessages(ctx, store.ListMessagesParams{SessionID: "ses_p", AfterSeq: after, Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		if len(page) > 4 {
			t.Fatalf("page of %d, limit 4", len(page))
		}
		for _, m := range page {
			if m.Seq <= after {
				t.Fatalf("seq %d after %d", m.Seq, after)
			}
			after = m.Seq
			if m.Role == store.RoleTool {
				if string(m.Metadata) != `{"k":1}` {
					t.Fatalf("metadata %s", m.Metadata)
				}
				got = append(got, "m3")
				continue
			}
			got = append(got, textOf(t, m))
		}
	}
	want := "[m1 m2 m3 m4 m5 m6 m7 m8 m9 m10]"
	if fmt.Sprint(got) != want {
		t.Fatalf("read %v, want %s", got, want)
	}
}

func testBadAppends(t *testing.T, s store.Store) {
	ctx := context.Background()
	createSession(t, s, "ses_b")
	appendTexts(t, s, "ses_b", "one")
	m1 := allMessages(t, s, "ses_b")[0]
	cases := []struct {
		name string
		id   string
		msgs []*store.Message
		is   error
	}{
		{"unknown session", "ses_nope", []*store.Message{textMsg(store.RoleUser, "x")}, store.ErrNotFound},
		{"unknown role", "ses_b", []*store.Message{textMsg(store.RoleUser, "x"), textMsg("narrator", "y")}, nil},
		{"taken id", "ses_b", []*store.Message{textMsg(store.RoleUser, "x"), {ID: m1.ID, Role: store.RoleUser, Parts: m1.Parts}}, store.ErrExists},
		{"id twice in one append", "ses_b", []*store.Message{{ID: "dup", Role: store.RoleUser, Parts: m1.Parts}, {ID: "dup", Role: store.RoleUser, Parts: m1.Parts}}, store.ErrExists},
		{"no messages", "ses_b", nil, nil},
	}
	for _, c := range cases {
		_, err := s.AppendMessages(ctx, c.id, c.msgs)
		if err == nil || (c.is != nil && !errors.Is(err, c.is)) {
			t.Fatalf("%s: %v, want an error (%v)", c.name, err, c.is)
		}
	}
	sess, _ := s.GetSession(ctx, "ses_b")
	if msgs := allMessages(t, s, "ses_b"); len(msgs) != 1 || sess.MessageCount != 1 || sess.LastSeq != 1 {
		t.Fatalf("after refused appends: %d messages, session %+v", len(msgs), sess)
	}
	if _, err := s.ListMessages(ctx, store.ListMessagesParams{SessionID: "ses_nope", Limit: 1}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ListMessages(unknown): %v", err)
	}
}

func testConcurrentAppends(t *testing.T, s store.Store) {
	ctx := context.Background()
	createSession(t, s, "ses_c")
	const writers, each = 8, 25
	concurrently(t, writers, func(w int) error {
		for i := range each {
			if _, err := s.AppendMessages(ctx, "ses_c", []*store.Message{textMsg(store.RoleUser, fmt.Sprintf("%d-%d", w, i))}); err != nil {
				return err
			}
		}
		return nil
	})
	msgs := allMessages(t, s, "ses_c")
	if len(msgs) != writers*each {
		t.Fatalf("%d messages, want %d", len(msgs), writers*each)
	}
	next := make([]int, writers)
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d", i, m.Seq)
		}
		var w, n int
		fmt.Sscanf(textOf(t, m), "%d-%d", &w, &n)
		if n != next[w] {
			t.Fatalf("writer %d: message %d arrived when %d was expected", w, n, next[w])
		}
		next[w]++
	}
}

func testListSessions(t *testing.T, s store.Store) {
	ctx := context.Background()
	for i := range 7 {
		createSession(t, s, fmt.Sprintf("ses_%02d", i))
	}
	var got []string
	var after store.SessionCursor
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("listing does not end")
		}
		page, next, err := s.ListSessions(ctx, store.ListSessionsParams{After: after, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, sess := range page {
			got = append(got, sess.ID)
		}
		if next.IsZero() {
			break
		}
		after = next
	}
	if len(got) != 7 {
		t.Fatalf("listed %v", got)
	}
	all, _, _ := s.ListSessions(ctx, store.ListSessionsParams{Limit: 100})
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.CreatedAt.Before(b.CreatedAt) || (a.CreatedAt.Equal(b.CreatedAt) && a.ID < b.ID) {
			t.Fatalf("not newest first: %s (%v) before %s (%v)", a.ID, a.CreatedAt, b.ID, b.CreatedAt)
		}
	}
	for i, sess := range all {
		if got[i] != sess.ID {
			t.Fatalf("paged %v, one page %v", got, all)
		}
	}
}

func testCompaction(t *testing.T, s store.Store) {
	ctx := context.Background()
	createSession(t, s, "ses_k")
	for i := 1; i <= 10; i++ {
		appendTexts(t, s, "ses_k", fmt.Sprintf("m%d", i))
	}
	before, _ := s.GetSession(ctx, "ses_k")
	prepared, committed := sessT0.Add(time.Minute), sessT0.Add(2*time.Minute)
	prep, err := s.PrepareCompaction(ctx, store.PrepareCompactionParams{SessionID: "ses_k", ArchiveID: "arc_1", KeepLast: 4, Memory: "old memory", MaxArchives: 5, Now: prepared})
	if err != nil {
		t.Fatal(err)
	}
	if prep.Archive.Status != store.ArchivePrepared || prep.Archive.CutSeq != 6 || prep.Archive.MessageCount != 10 || !prep.Archive.CreatedAt.Equal(prepared) {
		t.Fatalf("prepared archive %+v", prep.Archive)
	}
	if after, _ := s.GetSession(ctx, "ses_k"); after.Revision != before.Revision || len(allMessages(t, s, "ses_k")) != 10 {
		t.Fatalf("prepare changed the session: %+v", after)
	}
	a, err := s.GetArchive(ctx, "arc_1")
	if err != nil {
		t.Fatal(err)
	}
	st, err := a.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Messages) != 10 || st.Memory != "old memory" || st.Session.Revision != before.Revision || textOf(t, &st.Messages[9]) != "m10" {
		t.Fatalf("frozen state: %d messages, memory %q, session %+v", len(st.Messages), st.Memory, st.Session)
	}
	appendTexts(t, s, "ses_k", "m11") // lands between T1 and T2: kept
	sum := textMsg(store.RoleSystem, "summary of m1..m6")
	res, err := s.CommitCompaction(ctx, store.CommitCompactionParams{SessionID: "ses_k", ArchiveID: "arc_1", Summary: sum, MaxArchives: 5, Now: committed})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Archive.SettledAt.Equal(committed) || !res.Session.Summary.CompactedAt.Equal(committed) || !res.Session.UpdatedAt.Equal(committed) {
		t.Fatalf("commit at %v: archive settled %v, compacted %v, updated %v", committed, res.Archive.SettledAt, res.Session.Summary.CompactedAt, res.Session.UpdatedAt)
	}
	if res.Compacted != 6 || res.Archive.Status != store.ArchiveSucceeded || res.Session.MessageCount != 6 || res.Session.Summary.ArchiveID != "arc_1" || res.Session.Summary.Compactions != 1 || res.Session.LastSeq != 11 {
		t.Fatalf("commit result %+v session %+v", res, res.Session)
	}
	msgs := allMessages(t, s, "ses_k")
	var texts []string
	for _, m := range msgs {
		texts = append(texts, textOf(t, m))
	}
	if fmt.Sprint(texts) != "[summary of m1..m6 m7 m8 m9 m10 m11]" || msgs[0].Seq != 6 || msgs[0].Role != store.RoleSystem {
		t.Fatalf("after compaction: %v (first seq %d)", texts, msgs[0].Seq)
	}
	if _, err := s.CommitCompaction(ctx, store.CommitCompactionParams{SessionID: "ses_k", ArchiveID: "arc_1", Summary: sum}); !errors.As(err, new(*store.AttemptSettledError)) {
		t.Fatalf("second commit of one attempt: %v", err)
	}
	if _, err := s.FailCompaction(ctx, store.FailCompactionParams{SessionID: "ses_k", ArchiveID: "arc_1", Reason: "x"}); !errors.As(err, new(*store.AttemptSettledError)) {
		t.Fatalf("failing a settled attempt: %v", err)
	}
	appendTexts(t, s, "ses_k", "m12")
	if sess, _ := s.GetSession(ctx, "ses_k"); sess.MessageCount != 7 || sess.LastSeq != 12 {
		t.Fatalf("append after compaction: %+v", sess)
	}
}

func testNothingToCompact(t *testing.T, s store.Store) {
	ctx := context.Background()
	createSession(t, s, "ses_n")
	appendTexts(t, s, "ses_n", "a", "b")
	_, err := s.PrepareCompaction(ctx, store.PrepareCompactionParams{SessionID: "ses_n", ArchiveID: "arc_n", KeepLast: 2})
	if !errors.As(err, new(*store.NothingToCompactError)) {
		t.Fatalf("compacting 2 messages keeping 2: %v", err)
	}
	if as, _ := s.ListArchives(ctx, "ses_n"); len(as) != 0 {
		t.Fatalf("a refused compaction left %d archives", len(as))
	}
	if _, err := s.PrepareCompaction(ctx, store.PrepareCompactionParams{SessionID: "ses_nope", ArchiveID: "arc_x", KeepLast: 2}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("compacting an unknown session: %v", err)
	}
}

func testInterruptAndRetention(t *testing.T, s store.Store) {
	ctx := context.Background()
	createSession(t, s, "ses_r")
	appendTexts(t, s, "ses_r", "a", "b", "c")
	const maxArchives = 3
	// An abandoned attempt, then failures and successes.
	if _, err := s.PrepareCompaction(ctx, store.PrepareCompactionParams{SessionID: "ses_r", ArchiveID: "arc_00", KeepLast: 1, MaxArchives: maxArchives}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 8; i++ {
		id := fmt.Sprintf("arc_%02d", i)
		appendTexts(t, s, "ses_r", "more")
		prep, err := s.PrepareCompaction(ctx, store.PrepareCompactionParams{SessionID: "ses_r", ArchiveID: id, KeepLast: 1, MaxArchives: maxArchives})
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 && fmt.Sprint(prep.Interrupted) != "[arc_00]" {
			t.Fatalf("interrupted %v, want [arc_00]", prep.Interrupted)
		}
		if i%2 == 0 {
			_, err = s.FailCompaction(ctx, store.FailCompactionParams{SessionID: "ses_r", ArchiveID: id, Reason: "boom", MaxArchives: maxArchives})
		} else {
			_, err = s.CommitCompaction(ctx, store.CommitCompactionParams{SessionID: "ses_r", ArchiveID: id, Summary: textMsg(store.RoleSystem, id), MaxArchives: maxArchives})
		}
		if err != nil {
			t.Fatal(err)
		}
		as, err := s.ListArchives(ctx, "ses_r")
		if err != nil {
			t.Fatal(err)
		}
		if as[0].ID != id {
			t.Fatalf("newest archive %s, want %s", as[0].ID, id)
		}
		complete := 0
		for _, a := range as {
			if a.Complete() {
				complete++
			}
		}
		if complete > maxArchives {
			t.Fatalf("after %s: %d complete archives, target %d", id, complete, maxArchives)
		}
	}
	as, _ := s.ListArchives(ctx, "ses_r")
	var got []string
	for _, a := range as {
		got = append(got, fmt.Sprintf("%s:%s", a.ID, a.Status))
	}
	if want := "[arc_08:failed arc_07:succeeded arc_06:failed]"; fmt.Sprint(got) != want {
		t.Fatalf("archives %v, want %s", got, want)
	}
	if _, err := s.GetArchive(ctx, "arc_00"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("pruned archive still readable: %v", err)
	}
	// A prepared attempt is never pruned, and 0 keeps everything.
	appendTexts(t, s, "ses_r", "x")
	if _, err := s.PrepareCompaction(ctx, store.PrepareCompactionParams{SessionID: "ses_r", ArchiveID: "arc_09", KeepLast: 1, MaxArchives: 1}); err != nil {
		t.Fatal(err)
	}
	as, _ = s.ListArchives(ctx, "ses_r")
	if len(as) != 2 || as[0].ID != "arc_09" || as[0].Status != store.ArchivePrepared {
		t.Fatalf("with max 1 and one prepared: %+v", as)
	}
	if _, err := s.FailCompaction(ctx, store.FailCompactionParams{SessionID: "ses_r", ArchiveID: "arc_09", Reason: "cancelled", MaxArchives: 0}); err != nil {
		t.Fatal(err)
	}
	if as, _ = s.ListArchives(ctx, "ses_r"); len(as) != 2 {
		t.Fatalf("retention 0 deleted archives: %d left", len(as))
	}
}

func testDeleteSession(t *testing.T, s store.Store) {
	ctx := context.Background()
	createSession(t, s, "ses_d")
	appendTexts(t, s, "ses_d", "a", "b", "c")
	if _, err := s.PrepareCompaction(ctx, store.PrepareCompactionParams{SessionID: "ses_d", ArchiveID: "arc_d", KeepLast: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, "ses_d"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSession(ctx, "ses_d"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSession after delete: %v", err)
	}
	if _, err := s.GetArchive(ctx, "arc_d"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetArchive after delete: %v", err)
	}
	if err := s.DeleteSession(ctx, "ses_d"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	// The id is free again and starts empty.
	sess := createSession(t, s, "ses_d")
	if sess.MessageCount != 0 || sess.LastSeq != 0 || len(allMessages(t, s, "ses_d")) != 0 {
		t.Fatalf("recreated session not empty: %+v", sess)
	}
	if c, _ := s.Counts(ctx); c.Sessions != 1 {
		t.Fatalf("Counts().Sessions = %d", c.Sessions)
	}
}

func testSessionCopies(t *testing.T, s store.Store) {
	ctx := context.Background()
	createSession(t, s, "ses_copy")
	m := textMsg(store.RoleUser, "original")
	if _, err := s.AppendMessages(ctx, "ses_copy", []*store.Message{m}); err != nil {
		t.Fatal(err)
	}
	copy(m.Parts, "XXXXXXXXXX")
	got := allMessages(t, s, "ses_copy")
	if textOf(t, got[0]) != "original" {
		t.Fatalf("the store shares memory with the caller: %s", got[0].Parts)
	}
}
