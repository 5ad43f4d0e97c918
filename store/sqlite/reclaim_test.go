package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// TestReclaimSpaceSwitchesAnOlderDatabase: a database made before
// incremental vacuum (auto_vacuum NONE) is rewritten once by VACUUM, then
// reclaimed incrementally; both shrink it.
func TestReclaimSpaceSwitchesAnOlderDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "state.sqlite3")
	s, err := Open(ctx, p, Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	raw, err := sql.Open("sqlite", "file:"+p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("PRAGMA auto_vacuum = NONE; VACUUM"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if s, err = Open(ctx, p, Options{Synchronous: "NORMAL"}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, want := range []string{"vacuum", "incremental_vacuum"} {
		var ids []string
		for i := range 300 {
			id := fmt.Sprintf("run_%s_%d", want, i)
			if err := s.CreateRun(ctx, &store.Run{ID: id, Target: "t", Status: store.RunSucceeded, Input: []byte(`"` + strings.Repeat("x", 4000) + `"`)}); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if got, err := s.DeleteRuns(ctx, ids); err != nil || len(got.Deleted) != 300 {
			t.Fatalf("delete: %d, %v", len(got.Deleted), err)
		}
		sp, err := s.ReclaimSpace(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if sp.Method != want || sp.PagesAfter >= sp.PagesBefore/2 {
			t.Fatalf("reclaim: %+v; want %s and half the pages or fewer", sp, want)
		}
	}
	if sp, err := s.ReclaimSpace(ctx); err != nil || sp.Method != "" || sp.PagesAfter != sp.PagesBefore {
		t.Fatalf("reclaim with nothing free: %+v, %v", sp, err)
	}
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestPruneOperations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestStore(t)
	defer s.Close()
	// One write records pruneBatch + 2 old operations, and its own.
	err := s.write(ctx, "test", func(tx *sql.Tx) error {
		for i := range pruneBatch + 2 {
			if _, err := tx.Exec("INSERT INTO operations (id, kind, at) VALUES (?, 'test', ?)", fmt.Sprintf("op_%d", i), time.Now().Add(-time.Minute).UnixMilli()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneOperations(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("prune of nothing old: %d, %v", n, err)
	}
	n, err := s.PruneOperations(ctx, time.Now().Add(time.Hour))
	// Also the first prune's operation, and that of the second's first batch.
	if want := int64(pruneBatch + 5); err != nil || n != want {
		t.Fatalf("pruned %d, %v; want %d", n, err, want)
	}
	if o, err := s.Outcome(ctx, "op_0"); err != nil || o != store.NotCommitted {
		t.Fatalf("Outcome of a pruned operation = %v, %v", o, err)
	}
}
