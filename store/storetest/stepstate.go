package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/cairnhq/cairn/store"
)

// testStepStates runs the step state cases on backends that keep them
// (store.StepStateStore); others skip them.
func testStepStates(t *testing.T, newStore NewFunc) {
	skipUnless[store.StepStateStore](t, newStore, "this backend keeps no step states (store.StepStateStore): the run engine keeps step files")
	runCases(t, newStore, []storeCase{{"put get delete", testStepStatePutGetDelete}})
}

func testStepStatePutGetDelete(t *testing.T, s store.Store) {
	ctx := context.Background()
	m := s.(store.StepStateStore)
	if _, err := m.GetStepState(ctx, "run_a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get of a missing step state: %v; want ErrNotFound", err)
	}
	if err := m.PutStepState(ctx, "../x", []byte("{}")); err == nil {
		t.Fatal("a step state under an invalid run id was stored")
	}
	big := bytes.Repeat([]byte(`{"stdout":"é"}`), 100_000)
	for _, p := range []struct {
		run  string
		body []byte
	}{{"run_a", []byte(`{"step":"one"}`)}, {"run_b", big}, {"run_a", []byte(`{"step":"two"}`)}} {
		if err := m.PutStepState(ctx, p.run, p.body); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		run  string
		want []byte
	}{{"run_a", []byte(`{"step":"two"}`)}, {"run_b", big}} {
		if got, err := m.GetStepState(ctx, c.run); err != nil || !bytes.Equal(got, c.want) {
			t.Fatalf("get %s = %.40q, %v; want %.40q", c.run, got, err, c.want)
		}
	}
	if err := m.DeleteStepState(ctx, "run_a"); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteStepState(ctx, "run_a"); err != nil {
		t.Fatalf("deleting a missing step state: %v", err)
	}
	if _, err := m.GetStepState(ctx, "run_a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleted step state: %v", err)
	}
	if got, err := m.GetStepState(ctx, "run_b"); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("another run's step state after a delete: %d bytes, %v", len(got), err)
	}
}
