package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn/store"
)

// TestWriterStats: every committed operation and commit is counted, a
// refused operation is not.
func TestWriterStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "state.sqlite3"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.WriterStats(); got.Commits != 0 || got.Operations != 0 {
		t.Fatalf("fresh store: %+v, want no commit", got)
	}
	for _, id := range []string{"run_a", "run_b"} {
		if err := s.CreateRun(ctx, &store.Run{ID: id, Target: "t", Literals: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateRun(ctx, &store.Run{ID: "run_a", Target: "t", Literals: []byte(`{}`)}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second create of run_a: %v, want ErrExists", err)
	}
	got := s.WriterStats()
	if got.Commits != 2 || got.Operations != 2 || got.Busy <= 0 {
		t.Fatalf("after two creates and a refused one: %+v, want 2 commits, 2 operations and some busy time", got)
	}
}
