package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/cairnhq/cairn/store"
)

func testRuns(t *testing.T, newStore NewFunc) {
	t.Run("create and get", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		r := &store.Run{ID: "run_a", Target: "hello", Input: json.RawMessage(`{"who":"x"}`), Literals: json.RawMessage(`{"def":1}`), Trigger: store.Trigger{Kind: "manual"}}
		if err := s.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetRun(ctx, "run_a")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != store.RunQueued || got.Revision != 1 || got.Target != "hello" || string(got.Input) != `{"who":"x"}` || string(got.Literals) != `{"def":1}` || got.Trigger.Kind != "manual" {
			t.Fatalf("got %+v", got)
		}
		if err := s.CreateRun(ctx, &store.Run{ID: "run_a", Target: "other"}); !errors.Is(err, store.ErrExists) {
			t.Fatalf("second create with the same id: %v, want ErrExists", err)
		}
		if _, err := s.GetRun(ctx, "run_missing"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetRun(missing): %v, want ErrNotFound", err)
		}
		if c, _ := s.Counts(ctx); c.Runs != 1 {
			t.Fatalf("Counts().Runs = %d, want 1", c.Runs)
		}
	})
	t.Run("operation outcome", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		opCtx := store.WithOpID(ctx, "op_create_b")
		if err := s.CreateRun(opCtx, &store.Run{ID: "run_b", Target: "t"}); err != nil {
			t.Fatal(err)
		}
		if o, err := s.Outcome(ctx, "op_create_b"); err != nil || o != store.Committed {
			t.Fatalf("Outcome = %v, %v; want committed", o, err)
		}
		if err := s.CreateRun(opCtx, &store.Run{ID: "run_c", Target: "t"}); !errors.Is(err, store.ErrExists) {
			t.Fatalf("repeated operation id: %v, want ErrExists", err)
		}
		if _, err := s.GetRun(ctx, "run_c"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused operation left run_c behind: %v", err)
		}
	})
}
