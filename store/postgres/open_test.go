package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn/internal/pgtest"
	"github.com/cairnhq/cairn/store"
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
