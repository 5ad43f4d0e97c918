package sqlite

import (
	"context"
	"testing"

	"github.com/cairnhq/cairn/store"
)

// A declared statement is prepared on first use, on the write connection
// after the batch that used it and on the read pool, and kept.
func TestStatementsArePreparedOnFirstUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestStore(t)
	defer s.Close()
	if len(s.wstmts) != 0 {
		t.Fatalf("Open prepared %d write statements, want none", len(s.wstmts))
	}
	committed := make(chan struct{}, 1)
	s.afterCommit = func() { committed <- struct{}{} }
	for _, id := range []string{"run_1", "run_2"} {
		if err := s.CreateRun(ctx, &store.Run{ID: id, Target: "t", Literals: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		<-committed // the writer goroutine is done with the caches
		for _, q := range []string{qSavepoint, qRecordOp, qRelease} {
			if s.wstmts[q] == nil {
				t.Errorf("after %s, %q is not prepared on the write connection", id, q)
			}
		}
		if len(s.wpending) != 0 {
			t.Errorf("after %s, %d statements still queued", id, len(s.wpending))
		}
	}
	if _, err := s.Outcome(ctx, "op-unknown"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.rstmts.Load(qOperation); !ok {
		t.Errorf("%q is not prepared on the read pool after use", qOperation)
	}
}
