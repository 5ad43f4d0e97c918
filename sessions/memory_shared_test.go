package sessions_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
)

// TestMemoryFileSharedAcrossHosts: two Managers stand for two machines
// (their own memory and locks folders) over one store that keeps memory
// files. A compaction on one is read on the other, which writes the
// memory file out (0600); a compaction there is read back on the first,
// whose stale copy is replaced; a delete removes it from the store.
func TestMemoryFileSharedAcrossHosts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := setup(t, sessions.Options{})
	ma := sessions.New(a.st, sessions.Options{MemoryDir: a.memDir, LocksDir: a.locksDir, MemoryFiles: a.st})
	otherDir := t.TempDir()
	mb := sessions.New(a.st, sessions.Options{MemoryDir: filepath.Join(otherDir, "memory"), LocksDir: filepath.Join(otherDir, "locks"), MemoryFiles: a.st})

	a.create(t, "ses_shared")
	a.say(t, "ses_shared", "a", "b", "c", "d", "e", "f")
	if _, err := ma.Compact(ctx, sessions.CompactParams{SessionID: "ses_shared", Summary: "summary one"}); err != nil {
		t.Fatal(err)
	}
	bPath := mb.MemoryPath("ses_shared")
	if _, err := os.Stat(bPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("host b has a memory file before reading the session: %v", err)
	}
	if _, err := mb.Read(ctx, sessions.ReadParams{SessionID: "ses_shared"}); err != nil {
		t.Fatal(err)
	}
	checkMemoryFile(t, bPath, "summary one")
	if got, err := mb.ReadMemory("ses_shared"); err != nil || got != "summary one" {
		t.Fatalf("host b reads memory %q, %v", got, err)
	}

	b2 := []string{"g", "h", "i", "j", "k"}
	a.say(t, "ses_shared", b2...)
	res, err := mb.Compact(ctx, sessions.CompactParams{SessionID: "ses_shared", Summary: "summary two"})
	if err != nil {
		t.Fatal(err)
	}
	// The archive froze the memory host b read from the store.
	_, state, err := mb.Archive(ctx, res.Archive.ID)
	if err != nil {
		t.Fatal(err)
	}
	if state.Memory != "summary one" {
		t.Fatalf("the archive froze memory %q, want the first summary", state.Memory)
	}
	checkMemoryFile(t, bPath, "summary two")
	checkMemoryFile(t, ma.MemoryPath("ses_shared"), "summary one") // stale until read
	if got, err := ma.ReadMemory("ses_shared"); err != nil || got != "summary two" {
		t.Fatalf("host a reads memory %q, %v", got, err)
	}
	checkMemoryFile(t, ma.MemoryPath("ses_shared"), "summary two")
	var exported struct {
		Memory string `json:"memory"`
	}
	var buf jsonBuffer
	if err := ma.Export(ctx, &buf, sessions.ExportParams{SessionID: "ses_shared", Format: sessions.FormatJSON}); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(buf, &exported); err != nil || exported.Memory != "summary two" {
		t.Fatalf("export holds memory %q, %v", exported.Memory, err)
	}

	if err := ma.Delete(ctx, "ses_shared"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.st.GetMemoryFile(ctx, "ses_shared", res.Archive.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the store keeps the memory of a deleted session: %v", err)
	}
}

type jsonBuffer []byte

func (b *jsonBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }

func checkMemoryFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf("memory file %s = %q, %v; want %q", path, got, err, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("memory file %s mode %v, %v; want 0600", path, fi.Mode(), err)
	}
}
