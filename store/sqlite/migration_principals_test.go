package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cairnhq/cairn/store"
)

// TestPrincipalsMigrationRenamesOwners: a database from before
// principals keeps its automations, owned by human (was cli) and
// agent:<client> (was mcp:<client>), none pending.
func TestPrincipalsMigrationRenamesOwners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "old.sqlite3")
	names := migrationNames()
	before := slices.Index(names, "0009_principals.sql")
	if before < 0 {
		t.Fatal("no 0009_principals.sql migration")
	}
	raw, err := sql.Open("sqlite", "file:"+p)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names[:before] {
		body, err := migrationFiles.ReadFile(path.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.ExecContext(ctx, string(body)); err != nil {
			t.Fatalf("apply %s: %v", name, err)
		}
	}
	stmts := []string{
		fmt.Sprintf("PRAGMA application_id = %d", ApplicationID),
		fmt.Sprintf("PRAGMA user_version = %d", before),
	}
	for i, owner := range []string{"cli", "mcp:Claude-Code", "config"} {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO automations (id, owner, key, target, input, trigger, enabled, overlap, missed, revision, created_at, updated_at, state)
			VALUES ('aut_%d', '%s', 'k', 'hello', '{}', '{"kind":"interval","every":"1h"}', 1, 'skip', 'skip', 1, 0, 0, '{}')`, i, owner))
	}
	for _, q := range stmts {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list, err := s.ListAutomations(ctx, store.AutomationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var owners []string
	for _, a := range list {
		owners = append(owners, a.Owner)
		if a.Approval != "" || !a.Enabled {
			t.Errorf("%s: approval %q enabled %t after the migration", a.ID, a.Approval, a.Enabled)
		}
	}
	if want := []string{"agent:Claude-Code", "config", "human"}; !slices.Equal(owners, want) {
		t.Fatalf("owners after the migration %v, want %v", owners, want)
	}
	if err := s.AppendAudit(ctx, &store.AuditEntry{Principal: "human", Tool: "t", ArgsDigest: "d", Outcome: store.AuditOK}); err != nil {
		t.Fatalf("the audit table: %v", err)
	}
}
