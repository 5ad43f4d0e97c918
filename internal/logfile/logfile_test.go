package logfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRotatesAtTheCap(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "worker.log")
	l, err := Open(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(strings.Repeat("x", 39) + "\n") // 40 bytes
	for i := range 7 {
		line[0] = byte('a' + i)
		if _, err := l.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cur, _ := os.ReadFile(path)
	old, _ := os.ReadFile(path + ".1")
	// a b | c d | e f | g: two rotations; .1 holds e f, the file g.
	if len(cur) != 40 || cur[0] != 'g' || len(old) != 80 || old[0] != 'e' {
		t.Fatalf("worker.log %q, worker.log.1 %q", cur, old)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	// Reopening continues the size count.
	l, err = Open(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Write(bytes.Repeat([]byte("y"), 61)) //nolint:errcheck
	if cur, _ := os.ReadFile(path); cur[0] != 'y' {
		t.Fatalf("did not rotate after reopening: %q", cur)
	}
}

func TestSame(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !Same(f, path) || Same(os.Stderr, path) {
		t.Fatal("Same is wrong")
	}
}

// TestFollowedStderrMovesWithTheRotation: a descriptor that pointed at
// the log (a background worker's stderr) points at the new file after a
// rotation, not at the renamed one.
func TestFollowedStderrMovesWithTheRotation(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "worker.log")
	l, err := Open(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stderr, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	l.Follow(stderr)
	for range 3 {
		if _, err := l.Write([]byte(strings.Repeat("x", 39) + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := stderr.WriteString("panic: after the rotation\n"); err != nil {
		t.Fatal(err)
	}
	cur, _ := os.ReadFile(path)
	old, _ := os.ReadFile(path + ".1")
	if !strings.HasSuffix(string(cur), "panic: after the rotation\n") || strings.Contains(string(old), "panic") {
		t.Fatalf("worker.log %q, worker.log.1 %q", cur, old)
	}
}
