package secrets

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func setup(t *testing.T) *Store {
	t.Helper()
	dir := t.TempDir()
	return Open(dir, filepath.Join(dir, "locks"))
}

func TestSetGetListDelete(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := context.Background()
	if names, err := s.Names(); err != nil || len(names) != 0 {
		t.Fatalf("a store with no file: %v, %v", names, err)
	}
	for k, v := range map[string]string{"B_TOKEN": "b-value", "A": "a\"value\\"} {
		if err := s.Set(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	if names, err := s.Names(); err != nil || !slices.Equal(names, []string{"A", "B_TOKEN"}) {
		t.Fatalf("Names: %v, %v", names, err)
	}
	got, err := s.Get([]string{"A", "B_TOKEN"})
	if err != nil || got["A"] != "a\"value\\" || got["B_TOKEN"] != "b-value" {
		t.Fatalf("Get: %v, %v", got, err)
	}
	raw, _ := os.ReadFile(s.Path())
	if strings.Contains(string(raw), "b-value") {
		t.Fatalf("the file holds the value as written:\n%s", raw)
	}
	if fi, _ := os.Stat(s.Path()); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	if err := s.Delete(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	var ns *NotSetError
	if _, err := s.Get([]string{"A"}); !errors.As(err, &ns) || !strings.Contains(err.Error(), "mcp-host secrets set A") {
		t.Fatalf("Get of a deleted secret: %v", err)
	}
	if err := s.Delete(ctx, "A"); !errors.As(err, &ns) {
		t.Fatalf("Delete twice: %v", err)
	}
}

func TestRefusesUnsafeFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("readable by others", func(t *testing.T) {
		s := setup(t)
		if err := s.Set(ctx, "X", "v"); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(s.Path(), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get([]string{"X"}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Fatalf("Get from a 0644 file: %v", err)
		}
		if err := s.Set(ctx, "Y", "v"); err == nil {
			t.Fatal("Set into a 0644 file succeeded")
		}
	})
	t.Run("symlink", func(t *testing.T) {
		s := setup(t)
		target := filepath.Join(t.TempDir(), "elsewhere.json")
		if err := os.WriteFile(target, []byte(`{"version":1,"secrets":{}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, s.Path()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Names(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Fatalf("Names through a symlink: %v", err)
		}
	})
}

func TestValidateName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"A", "_X", "GITHUB_TOKEN", "A1"} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a", "1A", "A-B", "A B", strings.Repeat("A", MaxNameLen+1)} {
		if err := ValidateName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	s := setup(t)
	if err := s.Set(context.Background(), "OK", strings.Repeat("x", MaxValueLen+1)); err == nil {
		t.Error("a value over MaxValueLen was stored")
	}
}

func TestRefusesMultiLineValues(t *testing.T) {
	t.Parallel()
	s := setup(t)
	for _, v := range []string{"a\nb", "a\rb", "a\x00b"} {
		if err := s.Set(context.Background(), "K", v); err == nil || !strings.Contains(err.Error(), "one line") {
			t.Errorf("Set(%q): %v", v, err)
		}
	}
}
