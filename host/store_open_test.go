package host

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/pgtest"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestSharedStoreConfigErrors: a bad workspace_id, a URL that is not
// PostgreSQL's or cannot be parsed, and a URL without workspace_id are
// refused with errors that say what to write, never with the password.
func TestSharedStoreConfigErrors(t *testing.T) {
	t.Parallel()
	const pw = "hunter2secret"
	for name, tc := range map[string]struct{ config, want string }{
		"bad workspace_id":     {"workspace_id: Not_Valid\n", `workspace_id: workspace id "Not_Valid": use 1 to`},
		"long workspace_id":    {"workspace_id: " + strings.Repeat("a", 60) + "\n", "workspace_id: workspace id"},
		"missing workspace_id": {"store:\n  url: postgres://u:" + pw + "@db.example:5432/cairn\n", "store.url selects PostgreSQL, which needs workspace_id in .cairn/config.yaml"},
		"not postgres":         {"workspace_id: w1\nstore:\n  url: mysql://u:" + pw + "@db/x\n", `store.url: "mysql://…" is not a PostgreSQL URL: write postgres://`},
		"unparsable":           {"workspace_id: w1\nstore:\n  url: postgres://u:" + pw + "@db.example:notaport/cairn\n", "store.url: cannot parse the database URL"},
		"unknown key":          {"store:\n  uri: postgres://x\n", "field uri not found"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Open(context.Background(), setup(t, tc.config))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
			if strings.Contains(err.Error(), pw) {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
}

// TestDatabaseURLFromEnvWins: CAIRN_DATABASE_URL selects PostgreSQL over
// store.url; without workspace_id it is refused, saying so.
func TestDatabaseURLFromEnvWins(t *testing.T) {
	t.Setenv(EnvDatabaseURL, "postgres://envuser:envpw@env.example:6432/envdb")
	s := Settings{WorkspaceID: "team-a", Store: StoreSettings{URL: "postgres://cfg@cfg.example/cfgdb"}}
	sh, err := s.Shared()
	if err != nil || !sh.FromEnv || sh.WorkspaceID != "team-a" {
		t.Fatalf("Shared = %+v, %v", sh, err)
	}
	if d := sh.Describe(); d != "postgres envuser@env.example:6432/envdb" {
		t.Fatalf("Describe = %q", d)
	}
	_, err = Settings{}.Shared()
	if err == nil || !strings.Contains(err.Error(), "CAIRN_DATABASE_URL selects PostgreSQL, which needs workspace_id") || strings.Contains(err.Error(), "envpw") {
		t.Fatalf("env URL without workspace_id: %v", err)
	}
}

func TestRedactDatabasePassword(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, pw string }{
		{"postgres://u:s3cr%40t@h/db", "s3cr%40t"},
		{"postgres://u:s3cr%40t@h/db", "s3cr@t"},
		{"postgres://u@h/db?password=qpw123&sslmode=disable", "qpw123"},
		{"host=h user=u password='kv pw' dbname=d", "kv pw"},
		{"host=h password=kvpw2 dbname=d", "kvpw2"},
	} {
		got := (&SharedStore{URL: tc.url}).redact(fmt.Sprintf("connect %s: %s failed", tc.url, tc.pw))
		if strings.Contains(got, tc.pw) || !strings.Contains(got, "xxxxx") {
			t.Errorf("redact of %q = %q", tc.url, got)
		}
	}
}

// TestWorkspaceIDNamesTheStateFolder: with workspace_id the state folder
// is <root>/<workspace_id>, whatever the workspace's path, and
// ResolveWorkspace (commands without a host) agrees.
func TestWorkspaceIDNamesTheStateFolder(t *testing.T) {
	t.Parallel()
	cfg := setup(t, "workspace_id: team-a\n")
	cfg.Write = true
	h := open(t, cfg)
	if h.Workspace.ID != "team-a" || h.Workspace.StateDir != filepath.Join(cfg.StateRoot, "team-a") {
		t.Fatalf("workspace %+v", h.Workspace)
	}
	ws, err := ResolveWorkspace(cfg.Workspace, cfg.Workspace, cfg.StateRoot)
	if err != nil || ws.StateDir != h.Workspace.StateDir {
		t.Fatalf("ResolveWorkspace = %+v, %v", ws, err)
	}
	if d := h.StoreDescription(); d != "sqlite "+filepath.Join(cfg.StateRoot, "team-a", "state.sqlite3") {
		t.Fatalf("StoreDescription = %q", d)
	}
}

// TestOpenSharedStore: store.url and workspace_id open the PostgreSQL
// store, with journals and memory files in it and the description naming
// the database without its password; an unreachable server is an error
// without the password.
func TestOpenSharedStore(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	id := pgtest.WorkspaceID()
	cfg := setup(t, fmt.Sprintf("workspace_id: %s\nstore:\n  url: %q\n", strings.ReplaceAll(id, "_", "-"), url))
	cfg.Write = true
	h := open(t, cfg)
	if _, ok := h.Store.(*postgres.Store); !ok {
		t.Fatalf("the store is a %T", h.Store)
	}
	if store.Journals(h.Store) == nil || h.memoryFiles() == nil || h.Runs == nil {
		t.Fatal("the shared store keeps no journals or memory files")
	}
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("postgres %s@%s:%d/%s (workspace %s)", pc.ConnConfig.User, pc.ConnConfig.Host, pc.ConnConfig.Port, pc.ConnConfig.Database, strings.ReplaceAll(id, "_", "-"))
	if d := h.StoreDescription(); d != want {
		t.Fatalf("StoreDescription = %q, want %q", d, want)
	}

	const pw = "wrongpass77"
	bad := setup(t, "workspace_id: w1\nstore:\n  url: postgres://nobody:"+pw+"@127.0.0.1:1/none?connect_timeout=2\n")
	bad.Write = true
	_, err = Open(context.Background(), bad)
	if err == nil || !strings.Contains(err.Error(), "open the shared store (postgres nobody@127.0.0.1:1/none, from store.url)") || strings.Contains(err.Error(), pw) {
		t.Fatalf("unreachable server: %v", err)
	}
}
