package sessions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

type fixture struct {
	m                *sessions.Manager
	st               *sqlite.Store
	dir, db          string // the temporary folder and the database in it
	memDir, locksDir string
}

// setup opens a SQLite store in a temporary folder and a Manager over it,
// with its memory and locks folders there too.
func setup(t *testing.T, opts sessions.Options) *fixture {
	t.Helper()
	return setupStore(t, opts, sqlite.Options{})
}

// setupStore is setup with store options.
func setupStore(t *testing.T, opts sessions.Options, so sqlite.Options) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir, db: filepath.Join(dir, "state.sqlite3"), memDir: filepath.Join(dir, "memory"), locksDir: filepath.Join(dir, "locks")}
	st, err := sqlite.Open(context.Background(), f.db, so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	opts.MemoryDir, opts.LocksDir = f.memDir, f.locksDir
	f.st, f.m = st, sessions.New(st, opts)
	return f
}

// setupSix is setup with default options and one session, id, holding six
// messages: "a" to "f".
func setupSix(t *testing.T, id string) *fixture {
	t.Helper()
	f := setup(t, sessions.Options{})
	f.create(t, id)
	f.say(t, id, "a", "b", "c", "d", "e", "f")
	return f
}

// setupCounted is setup with default options and one session, id, holding
// n messages, "m0" to "m<n-1>", appended one at a time.
func setupCounted(t *testing.T, id string, n int) *fixture {
	t.Helper()
	f := setup(t, sessions.Options{})
	f.create(t, id)
	for i := range n {
		f.say(t, id, fmt.Sprintf("m%d", i))
	}
	return f
}

func (f *fixture) create(t *testing.T, id string) {
	t.Helper()
	if _, _, err := f.m.Create(context.Background(), sessions.CreateParams{ID: id}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) say(t *testing.T, id string, texts ...string) {
	t.Helper()
	var msgs []sessions.MessageInput
	for _, text := range texts {
		msgs = append(msgs, sessions.TextMessage(store.RoleUser, text))
	}
	if _, err := f.m.Append(context.Background(), id, msgs); err != nil {
		t.Fatal(err)
	}
}

func intp(n int) *int { return &n }

func textOf(t *testing.T, m *store.Message) string {
	t.Helper()
	var parts []struct{ Text string }
	if err := json.Unmarshal(m.Parts, &parts); err != nil || len(parts) == 0 {
		t.Fatalf("parts %s: %v", m.Parts, err)
	}
	return parts[0].Text
}
