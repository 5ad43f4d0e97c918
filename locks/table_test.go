//go:build unix

package locks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cairnhq/cairn/internal/ids"
)

func openTestTable(t *testing.T, dir string) *Table {
	t.Helper()
	tb, err := OpenTable(dir, "runs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tb.Close() })
	return tb
}

func mustKey(t *testing.T, tb *Table, key string) *KeyLock {
	t.Helper()
	l, err := tb.TryLock(key)
	if err != nil {
		t.Fatalf("TryLock(%s): %v", key, err)
	}
	t.Cleanup(func() { _ = l.Unlock() })
	return l
}

func held(t *testing.T, tb *Table, key string) bool {
	t.Helper()
	h, err := tb.Held(key)
	if err != nil {
		t.Fatalf("Held(%s): %v", key, err)
	}
	return h
}

// Two Tables of one path in one process exclude each other per key, as
// two processes do, and keys are independent of each other.
func TestTableKeysExcludeWithinAProcess(t *testing.T) {
	t.Parallel()
	dir := setup(t)
	a, b := openTestTable(t, dir), openTestTable(t, dir)
	l := mustKey(t, a, "run_1")
	for _, tb := range []*Table{a, b} {
		_, err := tb.TryLock("run_1")
		var he *HeldError
		if !errors.As(err, &he) || !errors.Is(err, ErrHeld) || he.Name != "run_1" || he.Holder.PID != 0 {
			t.Fatalf("second TryLock = %v, want a *HeldError naming run_1", err)
		}
		if !held(t, tb, "run_1") || held(t, tb, "run_2") {
			t.Fatal("Held does not tell run_1 (held) from run_2 (free)")
		}
	}
	l2 := mustKey(t, b, "run_2")
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil { // idempotent
		t.Fatal(err)
	}
	if held(t, a, "run_1") || !held(t, a, "run_2") {
		t.Fatal("after Unlock: run_1 should be free and run_2 held")
	}
	mustKey(t, b, "run_1")
	if err := l2.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// A key held by another process is refused; the moment that process
// dies, it is free.
func TestTableKeyFreeWhenHolderDies(t *testing.T) {
	t.Parallel()
	dir := setup(t)
	c := startChild(t, "holdkey", dir, "runs", "run_x")
	c.expect(t, "locked")
	tb := openTestTable(t, dir)
	if _, err := tb.TryLock("run_x"); !errors.Is(err, ErrHeld) {
		t.Fatalf("TryLock of a key another process holds = %v, want ErrHeld", err)
	}
	if !held(t, tb, "run_x") || held(t, tb, "run_y") {
		t.Fatal("Held does not see the other process's key")
	}
	mustKey(t, tb, "run_y")                      // other keys are free
	if err := c.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
	if held(t, tb, "run_x") {
		t.Fatal("the key of a dead process is still held")
	}
	mustKey(t, tb, "run_x")
}

// A table is one file whatever the number of keys locked and released,
// and nothing is left behind.
func TestTableDoesNotGrow(t *testing.T) {
	t.Parallel()
	dir := setup(t)
	tb := openTestTable(t, dir)
	for i := range 200 {
		l := mustKey(t, tb, fmt.Sprintf("run_%d", i))
		if i%2 == 0 {
			if err := l.Unlock(); err != nil {
				t.Fatal(err)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "runs" {
		t.Fatalf("lock directory holds %v, want only the table", entries)
	}
	fi, err := os.Stat(filepath.Join(dir, "runs"))
	if err != nil || fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("table file: %v %v", fi, err)
	}
}

// Closing every Table closes the file once no key is held through it; a
// key still held keeps it open until it is released.
func TestTableFileClosesWhenIdle(t *testing.T) {
	t.Parallel()
	dir := setup(t)
	path, _ := filepath.Abs(filepath.Join(dir, "runs"))
	open := func() bool {
		tablesMu.Lock()
		defer tablesMu.Unlock()
		_, ok := tables[path]
		return ok
	}
	tb, err := OpenTable(dir, "runs")
	if err != nil {
		t.Fatal(err)
	}
	l, err := tb.TryLock("run_1")
	if err != nil {
		t.Fatal(err)
	}
	tb.Close()
	tb.Close()
	if !open() {
		t.Fatal("the file was closed while a key is held")
	}
	other := openTestTable(t, dir)
	if !held(t, other, "run_1") {
		t.Fatal("the key was released by Close")
	}
	other.Close()
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if open() {
		t.Fatal("the file stays open with no table and no key")
	}
	if _, err := tb.TryLock("run_2"); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("TryLock on a closed table = %v", err)
	}
}

// When the table file is replaced (removed, renamed over), keys are taken
// in the file the path names now, where other processes take them.
func TestTableFollowsAReplacedFile(t *testing.T) {
	t.Parallel()
	dir := setup(t)
	tb := openTestTable(t, dir)
	old := mustKey(t, tb, "run_old")
	p := filepath.Join(dir, "runs")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, "holdkey", dir, "runs", "run_x")
	c.expect(t, "locked")
	if _, err := tb.TryLock("run_x"); !errors.Is(err, ErrHeld) {
		t.Fatalf("TryLock after the file was replaced = %v, want ErrHeld (the child holds it in the new file)", err)
	}
	if !held(t, tb, "run_x") {
		t.Fatal("Held does not look at the new file")
	}
	mustKey(t, tb, "run_new")
	if err := old.Unlock(); err != nil {
		t.Fatal(err)
	}
	c.wait(t)
}

func TestTableRefusesBadNames(t *testing.T) {
	t.Parallel()
	dir := setup(t)
	if _, err := OpenTable(dir, "../runs"); !isInvalid(err) {
		t.Fatalf("OpenTable(../runs) = %v", err)
	}
	if _, err := OpenExistingTable(dir, "runs"); !errors.Is(err, ErrNoTable) {
		t.Fatalf("OpenExistingTable of a missing file = %v, want ErrNoTable", err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("refusals created the lock directory (%v)", err)
	}
	tb := openTestTable(t, dir)
	for _, key := range []string{"", "../x", "a\x00b"} {
		if _, err := tb.TryLock(key); !isInvalid(err) {
			t.Errorf("TryLock(%q) = %v, want an *ids.InvalidError", key, err)
		}
		if _, err := tb.Held(key); !isInvalid(err) {
			t.Errorf("Held(%q) = %v, want an *ids.InvalidError", key, err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenTable(dir, "linked"); err == nil {
		t.Fatal("a symlinked table was opened")
	}
}

func isInvalid(err error) bool {
	_, ok := errors.AsType[*ids.InvalidError](err)
	return ok
}

// Keys spread over the table: distinct keys get distinct offsets.
func TestTableOffsets(t *testing.T) {
	t.Parallel()
	var offs []int64
	for i := range 10000 {
		o := offset(fmt.Sprintf("run_%d", i))
		if o < 0 {
			t.Fatalf("negative offset %d", o)
		}
		offs = append(offs, o)
	}
	slices.Sort(offs)
	if len(slices.Compact(offs)) != 10000 {
		t.Fatal("colliding offsets among 10,000 keys")
	}
}
