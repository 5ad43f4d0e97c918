package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFindNearestCairnFolder(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	deep := filepath.Join(top, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := Find(deep); got != deep {
		t.Fatalf("without .cairn: Find = %s, want the directory itself", got)
	}
	if err := os.Mkdir(filepath.Join(top, "a", DefsDirName), 0o700); err != nil {
		t.Fatal(err)
	}
	if got := Find(deep); got != filepath.Join(top, "a") {
		t.Fatalf("Find = %s, want %s", got, filepath.Join(top, "a"))
	}
}

func TestIDIsStableAndCanonical(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	a, err := Resolve(dir, "", "/state")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Resolve(link, "", "/state")
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != b.ID || len(a.ID) != 12 || a.StateDir != filepath.Join("/state", a.ID) {
		t.Fatalf("ids %q and %q (state %s): want one 12-digit id for a folder and a link to it", a.ID, b.ID, a.StateDir)
	}
}

func TestPrepareAndTouch(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "state")
	ws, err := Resolve(t.TempDir(), "", root)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Prepare(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{root, ws.StateDir, ws.OutputDir(), ws.LocksDir(), ws.MemoryDir()} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v, %v; want a 0700 folder", d, fi.Mode().Perm(), err)
		}
	}
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := ws.Touch(first); err != nil {
		t.Fatal(err)
	}
	if err := ws.Touch(first.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	info, err := ReadInfo(ws.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if !info.FirstSeen.Equal(first) || !info.LastSeen.Equal(first.Add(time.Hour)) || info.Root != ws.Root {
		t.Fatalf("workspace.json = %+v", info)
	}
	fi, _ := os.Stat(filepath.Join(ws.StateDir, "workspace.json"))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("workspace.json mode %v, want 0600", fi.Mode().Perm())
	}
	list, err := List(root)
	if err != nil || len(list) != 1 || list[0].ID != ws.ID {
		t.Fatalf("List = %+v, %v", list, err)
	}
}

func TestPrepareRefusesOpenStateFolder(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	ws, err := Resolve(t.TempDir(), "", root)
	if err != nil {
		t.Fatal(err)
	}
	err = ws.Prepare()
	var unsafe *UnsafeDirError
	if !errors.As(err, &unsafe) || !strings.Contains(err.Error(), root) || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("Prepare on a 0777 state root: %v; want an error naming it and the fix", err)
	}
	if _, err := os.Stat(ws.StateDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Prepare created %s inside a refused root", ws.StateDir)
	}
	fi, _ := os.Stat(root)
	if fi.Mode().Perm() != 0o777 {
		t.Fatalf("refused folder's mode was changed to %v", fi.Mode().Perm())
	}
}

func TestListMissingRootIsEmpty(t *testing.T) {
	t.Parallel()
	list, err := List(filepath.Join(t.TempDir(), "nothing"))
	if err != nil || len(list) != 0 {
		t.Fatalf("List = %v, %v", list, err)
	}
}
