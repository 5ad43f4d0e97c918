// Package testws makes workspaces for tests: a temporary project folder
// holding workflow files, its state folder in another temporary folder,
// and, when a test wants one, the workspace's SQLite store.
package testws

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/workspace"
)

// New returns the workspace of a new temporary folder whose
// .cairn/workflows holds files (content by file name). Its state folder
// is under another temporary folder and is not created (see Store).
func New(t testing.TB, files map[string]string) *workspace.Workspace {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, workspace.DefsDirName, "workflows")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.Resolve(root, root, filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// Store prepares ws's state folder and opens its SQLite store, closed when
// the test ends.
func Store(t testing.TB, ws *workspace.Workspace, opts sqlite.Options) *sqlite.Store {
	t.Helper()
	if err := ws.Prepare(); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), ws.DBPath(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
