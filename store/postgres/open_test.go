package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/pgtest"
	"github.com/cairnhq/cairn/store"
	"github.com/jackc/pgx/v5"
)

func TestSchemaName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id, schema string
	}{
		{"team", "cairn_team"},
		{"build-box_2", "cairn_build_box_2"},
		{"0a", "cairn_0a"},
		{strings.Repeat("a", MaxWorkspaceID), "cairn_" + strings.Repeat("a", MaxWorkspaceID)},
		{"", ""},
		{"Team", ""},
		{"-x", ""},
		{"a b", ""},
		{"a;drop", ""},
		{`a"b`, ""},
		{"é", ""},
		{strings.Repeat("a", MaxWorkspaceID+1), ""},
	} {
		got, err := SchemaName(tc.id)
		if tc.schema == "" {
			if err == nil || !strings.Contains(err.Error(), "lowercase letters") {
				t.Errorf("SchemaName(%q) = %q, %v; want a refusal saying what to use", tc.id, got, err)
			}
			continue
		}
		if err != nil || got != tc.schema {
			t.Errorf("SchemaName(%q) = %q, %v; want %q", tc.id, got, err, tc.schema)
		}
	}
	if _, err := Open(context.Background(), Config{URL: "postgres://nowhere.invalid/x", WorkspaceID: "Bad!"}); err == nil || !strings.Contains(err.Error(), "workspace id") {
		t.Fatalf("Open with a bad workspace id: %v", err)
	}
}

// Two workspaces in one database do not see each other's state; two ids
// that map to one schema name are told apart.
func TestWorkspacesAreSeparate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	open := func(id string) (*Store, error) {
		s, err := Open(ctx, Config{URL: url, WorkspaceID: id})
		if err == nil {
			t.Cleanup(func() { s.Close() })
		}
		return s, err
	}
	a, err := open("team-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := open("team-b")
	if err != nil {
		t.Fatal(err)
	}
	var path, idle string
	if err := a.pool.QueryRow(ctx, "SELECT current_setting('search_path'), current_setting('idle_in_transaction_session_timeout')").Scan(&path, &idle); err != nil || path != "cairn_team_a" || idle != "30s" {
		t.Fatalf("a connection's search_path %q, idle_in_transaction_session_timeout %q (%v)", path, idle, err)
	}
	if err := a.CreateRun(ctx, &store.Run{ID: "run_1", Target: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetRun(ctx, "run_1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("workspace b sees a's run: %v", err)
	}
	if err := b.CreateRun(ctx, &store.Run{ID: "run_1", Target: "t"}); err != nil {
		t.Fatalf("the same run id in another workspace: %v", err)
	}
	if _, err := open("team_a"); err == nil || !strings.Contains(err.Error(), `holds workspace "team-a"`) {
		t.Fatalf("opening team_a over team-a's schema: %v", err)
	}
	again, err := open("team-a")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := again.Counts(ctx); err != nil || c.Runs != 1 {
		t.Fatalf("reopened workspace counts %+v, %v", c, err)
	}
}

// Hosts opening a new workspace at once: one applies the migrations, the
// others wait for it and find the schema current.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, id := pgtest.URL(t), pgtest.WorkspaceID()
	const n = 6
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = Open(ctx, Config{URL: url, WorkspaceID: id, MaxConns: 2}) })
	}
	wg.Wait()
	applied := 0
	for i, s := range stores {
		if errs[i] != nil {
			t.Fatalf("open %d: %v", i, errs[i])
		}
		defer s.Close()
		applied += s.migrated
	}
	if want := len(migrations()); applied != want {
		t.Fatalf("the opens applied %d migrations in all, want %d (once each)", applied, want)
	}
	var rows int
	if err := stores[0].pool.QueryRow(ctx, "SELECT count(*) FROM schema_migrations").Scan(&rows); err != nil || rows != len(migrations()) {
		t.Fatalf("schema_migrations has %d rows (%v)", rows, err)
	}
}

// A schema migrated by a newer binary, or whose applied migration differs
// from the embedded one, is refused with a message saying what to do.
func TestMigrationsAreChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, id := pgtest.URL(t), pgtest.WorkspaceID()
	s, err := Open(ctx, Config{URL: url, WorkspaceID: id})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.migrated != len(migrations()) {
		t.Fatalf("a new schema applied %d migrations, want %d", s.migrated, len(migrations()))
	}
	for _, tc := range []struct {
		name, tamper, undo, want string
	}{
		{"newer", "INSERT INTO schema_migrations (version, name, checksum) VALUES (9999, '9999_future.sql', 'x')",
			"DELETE FROM schema_migrations WHERE version = 9999", "upgrade mcp-host"},
		{"changed", "UPDATE schema_migrations SET checksum = 'abcdefabcdefabcdef' WHERE version = 1",
			"UPDATE schema_migrations SET checksum = '" + migrations()[0].checksum + "' WHERE version = 1", "differs from the one applied"},
	} {
		if _, err := s.pool.Exec(ctx, tc.tamper); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(ctx, Config{URL: url, WorkspaceID: id}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: open = %v, want %q", tc.name, err, tc.want)
		}
		if _, err := s.pool.Exec(ctx, tc.undo); err != nil {
			t.Fatal(err)
		}
	}
	again, err := Open(ctx, Config{URL: url, WorkspaceID: id})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.migrated != 0 {
		t.Fatalf("reopening a current schema applied %d migrations", again.migrated)
	}
}

// Old operation ids are forgotten, newer ones kept: Outcome still answers
// for those.
func TestPruneOperations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t, pgtest.URL(t))
	if _, err := s.pool.Exec(ctx, "INSERT INTO operations (id, kind, at) SELECT 'op_old_' || n, 'test', now() - interval '30 days' FROM generate_series(1, $1) AS n", pruneBatch+10); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(store.WithOpID(ctx, "op_new"), &store.Run{ID: "run_1", Target: "t"}); err != nil {
		t.Fatal(err)
	}
	n, err := s.PruneOperations(ctx, time.Now().Add(-24*time.Hour))
	if err != nil || n != pruneBatch+10 {
		t.Fatalf("PruneOperations = %d, %v; want %d", n, err, pruneBatch+10)
	}
	if o, err := s.Outcome(ctx, "op_new"); err != nil || o != store.Committed {
		t.Fatalf("Outcome of a kept operation = %v, %v", o, err)
	}
	if o, err := s.Outcome(ctx, "op_old_1"); err != nil || o != store.NotCommitted {
		t.Fatalf("Outcome of a pruned operation = %v, %v", o, err)
	}
}

// Close waits for the writes in flight; later writes are refused with
// store.ErrClosed, and closing again does nothing.
func TestClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, Config{URL: pgtest.URL(t), WorkspaceID: pgtest.WorkspaceID()})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	s.beforeCommit = func(pgx.Tx) { close(entered); <-release }
	wrote := make(chan error, 1)
	go func() { wrote <- s.CreateRun(ctx, &store.Run{ID: "run_1", Target: "t"}) }()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) with a write in flight", err)
	case err := <-wrote:
		t.Fatalf("the write ended (%v) before it was let go", err)
	default:
	}
	close(release)
	if err := <-wrote; err != nil {
		t.Fatalf("the write in flight: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(ctx, &store.Run{ID: "run_2", Target: "t"}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("a write after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}
