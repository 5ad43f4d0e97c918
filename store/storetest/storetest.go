// Package storetest is the conformance suite every store backend passes:
// storetest.Run(t, newStore) from the backend's own tests.
package storetest

import (
	"context"
	"sync"
	"testing"

	"github.com/cairnhq/cairn/store"
)

// NewFunc returns a fresh, empty store; the suite closes it.
type NewFunc func(t *testing.T) store.Store

// Run runs every conformance case against stores made by newStore.
func Run(t *testing.T, newStore NewFunc) {
	t.Run("journals", func(t *testing.T) { t.Parallel(); testJournals(t, newStore) })
	t.Run("memory files", func(t *testing.T) { t.Parallel(); testMemoryFiles(t, newStore) })
	t.Run("base", func(t *testing.T) { t.Parallel(); testBase(t, newStore) })
	t.Run("runs", func(t *testing.T) { t.Parallel(); testRuns(t, newStore) })
	t.Run("automations", func(t *testing.T) { t.Parallel(); testAutomations(t, newStore) })
	t.Run("sessions", func(t *testing.T) { t.Parallel(); testSessions(t, newStore) })
	t.Run("leases", func(t *testing.T) { t.Parallel(); testLeases(t, newStore) })
	t.Run("peers", func(t *testing.T) { t.Parallel(); testPeers(t, newStore) })
	t.Run("forget leases", func(t *testing.T) { t.Parallel(); testForgetLeases(t, newStore) })
	t.Run("outbox", func(t *testing.T) { t.Parallel(); testOutbox(t, newStore) })
	t.Run("audit", func(t *testing.T) { t.Parallel(); testAudit(t, newStore) })
	t.Run("step states", func(t *testing.T) { t.Parallel(); testStepStates(t, newStore) })
}

func open(t *testing.T, newStore NewFunc) store.Store {
	t.Helper()
	s := newStore(t)
	t.Cleanup(func() { s.Close() })
	return s
}

func testBase(t *testing.T, newStore NewFunc) {
	ctx := context.Background()
	s := open(t, newStore)
	o, err := s.Outcome(ctx, "op_never_seen")
	if err != nil || o != store.NotCommitted {
		t.Fatalf("Outcome of an unknown operation = %v, %v; want not committed", o, err)
	}
	c, err := s.Counts(ctx)
	if err != nil || c != (store.Counts{}) {
		t.Fatalf("Counts on an empty store = %+v, %v", c, err)
	}
}

// storeCase is one conformance case, given a fresh store.
type storeCase struct {
	name string
	test func(t *testing.T, s store.Store)
}

// runCases runs each case as a parallel subtest with its own store.
func runCases(t *testing.T, newStore NewFunc, cases []storeCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { t.Parallel(); c.test(t, open(t, newStore)) })
	}
}

// concurrently runs fn(0) to fn(n-1) in n goroutines, waits for them all,
// then fails the test with the first error any returned.
func concurrently(t *testing.T, n int, fn func(i int) error) {
	t.Helper()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs <- fn(i) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
