package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/cairnhq/cairn/store"
)

// compactOnce prepares and commits one compaction keeping keep messages.
func compactOnce(t *testing.T, s store.Store, id, archiveID string, keep int) *store.CompactionResult {
	t.Helper()
	ctx := context.Background()
	if _, err := s.PrepareCompaction(ctx, store.PrepareCompactionParams{SessionID: id, ArchiveID: archiveID, KeepLast: keep, MaxArchives: 5}); err != nil {
		t.Fatal(err)
	}
	res, err := s.CommitCompaction(ctx, store.CommitCompactionParams{SessionID: id, ArchiveID: archiveID, Summary: textMsg(store.RoleSystem, "summary "+archiveID), MaxArchives: 5})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func testCompactTwice(t *testing.T, s store.Store) {
	ctx := context.Background()
	createSession(t, s, "ses_2")
	for i := 1; i <= 10; i++ {
		appendTexts(t, s, "ses_2", fmt.Sprintf("m%d", i))
	}
	first := allMessages(t, s, "ses_2")[0]
	compactOnce(t, s, "ses_2", "arc_2a", 2)
	// The id of a replaced message is free again.
	again := textMsg(store.RoleUser, "m1 again")
	again.ID = first.ID
	if _, err := s.AppendMessages(ctx, "ses_2", []*store.Message{again}); err != nil {
		t.Fatalf("append with the id of a compacted message: %v", err)
	}
	res := compactOnce(t, s, "ses_2", "arc_2b", 1)
	if res.Compacted != 3 || res.Session.MessageCount != 2 {
		t.Fatalf("second compaction: compacted %d, session %+v", res.Compacted, res.Session)
	}
	a, err := s.GetArchive(ctx, "arc_2b")
	if err != nil {
		t.Fatal(err)
	}
	st, err := a.Decode()
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range st.Messages {
		texts = append(texts, textOf(t, &m))
	}
	if fmt.Sprint(texts) != "[summary arc_2a m9 m10 m1 again]" {
		t.Fatalf("the second archive froze %v", texts)
	}
	var after []string
	for _, m := range allMessages(t, s, "ses_2") {
		after = append(after, textOf(t, m))
	}
	if fmt.Sprint(after) != "[summary arc_2b m1 again]" {
		t.Fatalf("after the second compaction: %v", after)
	}
}
