package postgres

import (
	"context"
	"testing"

	"github.com/cairnhq/cairn/internal/pgtest"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/storetest"
)

// openTest opens a store of a fresh workspace in the database at url and
// closes it when t ends.
func openTest(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{URL: url, WorkspaceID: pgtest.WorkspaceID(), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t) // one database; a schema per store
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t, url) })
}
