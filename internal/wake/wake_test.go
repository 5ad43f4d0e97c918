//go:build linux

package wake

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/reexec"
)

const roleEnv = "CAIRN_WAKE_TEST_ROLE"

func TestMain(m *testing.M) {
	reexec.Main(m, roleEnv, func(role string) int {
		io.Copy(io.Discard, os.Stdin) // "wait": until the parent closes stdin or kills us
		return 0
	})
}

// within fails the test unless c delivers before a generous deadline.
func within[T any](t *testing.T, c <-chan T, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10s", what)
	}
}

func TestDirTellsOfWritesByPrefix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := WatchDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a, b := d.Subscribe("run-a"), d.Subscribe("run-b")
	defer a.Close()
	defer b.Close()

	f, err := os.OpenFile(filepath.Join(dir, "run-b.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	within(t, b.C(), "event for run-b's creation")
	select {
	case <-a.C():
		t.Fatal("run-a's subscription was woken by a write to run-b")
	default:
	}
	if _, err := f.WriteString("line\n"); err != nil {
		t.Fatal(err)
	}
	within(t, b.C(), "event for a line appended to run-b")
	if err := os.WriteFile(filepath.Join(dir, "run-a.jsonl"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	within(t, a.C(), "event for run-a")
	if d.Err() != nil {
		t.Fatalf("watch ended: %v", d.Err())
	}
}

func TestDirEndsWhenTheFolderGoes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := WatchDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := d.Subscribe("")
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for d.Err() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the watch of a removed folder did not end")
		}
		within(t, s.C(), "wake-up after the folder was removed")
	}
}

func TestExitTellsOfAProcessDeath(t *testing.T) {
	t.Parallel()
	c := reexec.Start(t, reexec.Params{Env: []string{roleEnv + "=wait"}})
	x, err := WatchExit(c.Cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Stop()
	select {
	case <-x.Done():
		t.Fatal("Done closed while the process lives")
	default:
	}
	if err := c.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	within(t, x.Done(), "exit of a killed process")
}

func TestExitStopAndGone(t *testing.T) {
	t.Parallel()
	x, err := WatchExit(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x.Stop()
	x.Stop()
	within(t, x.Done(), "Done after Stop")

	c := reexec.Start(t, reexec.Params{Env: []string{roleEnv + "=wait"}})
	c.Stdin.Close()
	if err := c.Cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := WatchExit(c.Cmd.Process.Pid); !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("WatchExit of a reaped process: %v, want os.ErrProcessDone", err)
	}
}

func TestDirEntriesTellsOfCreationAndRemoval(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.sqlite3")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := WatchDirEntries(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := d.Subscribe("state.sqlite3")
	if err := os.WriteFile(path, []byte("a write"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The removal's event comes after the write's would have: only it
	// may arrive.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	within(t, s.C(), "event for the removal")
	if err := os.WriteFile(path, nil, 0o600); err != nil { // created again
		t.Fatal(err)
	}
	within(t, s.C(), "event for the creation")
}
