// Package systemdtest checks systemd unit files in tests with
// `systemd-analyze verify`, where the tool exists and works.
package systemdtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Verify runs `systemd-analyze verify --user` on a unit named name
// with content, and returns its output and error. It skips t when the tool
// is missing, or when it rejects even a minimal unit whose program exists
// (the environment lacks what it needs: that is not the unit's fault), and
// says which.
func Verify(t *testing.T, name string, content []byte) ([]byte, error) {
	t.Helper()
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not on PATH: the structural checks ran, verify did not")
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := verify(t, tool, "cairn-control.service", []byte("[Service]\nExecStart="+bin+"\n")); err != nil {
		t.Skipf("systemd-analyze verify rejects a minimal unit here, so it cannot judge ours (%v):\n%s", err, out)
	}
	return verify(t, tool, name, content)
}

func verify(t *testing.T, tool, name string, content []byte) ([]byte, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	// A user manager needs a runtime folder; a private one does.
	cmd := exec.Command(tool, "verify", "--user", path)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir())
	return cmd.CombinedOutput()
}
