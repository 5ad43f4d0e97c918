package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/store"
)

// testMemoryFiles runs the memory file cases on backends that keep them
// (store.MemoryFileStore); others skip them.
func testMemoryFiles(t *testing.T, newStore NewFunc) {
	skipUnless[store.MemoryFileStore](t, newStore, "this backend keeps no memory files (store.MemoryFileStore): sessions keep them as files")
	runCases(t, newStore, []storeCase{{"put get prune", testMemoryFilePutGetPrune}})
}

func testMemoryFilePutGetPrune(t *testing.T, s store.Store) {
	ctx := context.Background()
	m := s.(store.MemoryFileStore)
	if _, err := m.GetMemoryFile(ctx, "ses_a", "arc_1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get of a missing memory file: %v; want ErrNotFound", err)
	}
	big := strings.Repeat("é summary ", 100_000) // ~1 MB, multi-byte
	for _, p := range []struct{ ses, arc, body string }{
		{"ses_a", "arc_1", "first"}, {"ses_a", "arc_2", big}, {"ses_b", "arc_1", "other session"}, {"ses_a", "arc_1", "first, again"},
	} {
		if err := m.PutMemoryFile(ctx, p.ses, p.arc, p.body); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ ses, arc, want string }{{"ses_a", "arc_1", "first, again"}, {"ses_a", "arc_2", big}, {"ses_b", "arc_1", "other session"}} {
		if got, err := m.GetMemoryFile(ctx, c.ses, c.arc); err != nil || got != c.want {
			t.Fatalf("get %s/%s = %.40q, %v; want %.40q", c.ses, c.arc, got, err, c.want)
		}
	}
	if err := m.PruneMemoryFiles(ctx, "ses_a", "arc_2"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetMemoryFile(ctx, "ses_a", "arc_1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a pruned memory file: %v", err)
	}
	if got, err := m.GetMemoryFile(ctx, "ses_a", "arc_2"); err != nil || got != big {
		t.Fatalf("the kept memory file: %d bytes, %v", len(got), err)
	}
	if got, err := m.GetMemoryFile(ctx, "ses_b", "arc_1"); err != nil || got != "other session" {
		t.Fatalf("another session's memory file after a prune: %q, %v", got, err)
	}
	if err := m.PruneMemoryFiles(ctx, "ses_a", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetMemoryFile(ctx, "ses_a", "arc_2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after pruning all: %v", err)
	}
	if err := m.PutMemoryFile(ctx, "../x", "arc_1", "x"); err == nil {
		t.Fatal("an invalid session id was accepted")
	}
}
