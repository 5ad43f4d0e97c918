package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/systemdtest"
)

// serviceCLI runs this test binary as mcp-host with home as HOME and no
// user bus, so nothing reaches the machine's service manager.
func serviceCLI(t *testing.T, c *cliWS, home string, args ...string) (string, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"--state", c.state, "--workspace", c.root}, args...)...)
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "HOME" && k != "XDG_CONFIG_HOME" && k != "XDG_RUNTIME_DIR" && k != "DBUS_SESSION_BUS_ADDRESS" {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "HOME="+home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("mcp-host %v: %v\n%s", args, err, errb.String())
	}
	return out.String(), errb.String()
}

func TestServiceInstallUninstall(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the systemd unit is installed on Linux only; the plist is checked in package service")
	}
	c := newCLIWS(t, nil)
	home := t.TempDir()
	unit := filepath.Join(home, ".config", "systemd", "user", "cairn-worker-"+c.ws.ID+".service")

	printed, _ := serviceCLI(t, c, home, "service", "install", "--print")
	if !strings.Contains(printed, "[Service]\n") || !strings.Contains(printed, " --workspace "+c.root+" worker --idle 0\n") {
		t.Fatalf("--print:\n%s", printed)
	}
	if _, err := os.Stat(unit); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("--print wrote the unit: %v", err)
	}
	// What --print shows is a unit systemd accepts (where systemd-analyze
	// exists and works; package service checks the structure everywhere).
	// A subtest: a skip there leaves the install checks below to run.
	t.Run("systemd-analyze verify", func(t *testing.T) {
		if out, err := systemdtest.Verify(t, filepath.Base(unit), []byte(printed)); err != nil || strings.Contains(string(out), filepath.Base(unit)) {
			t.Fatalf("systemd-analyze verify of --print: %v\n%s\n%s", err, out, printed)
		}
	})

	out, _ := serviceCLI(t, c, home, "service", "install")
	if !strings.Contains(out, "wrote "+unit) || !strings.Contains(out, "systemctl --user enable --now") || !strings.Contains(out, "loginctl enable-linger") {
		t.Fatalf("install:\n%s", out)
	}
	if b, err := os.ReadFile(unit); err != nil || string(b) != printed {
		t.Fatalf("installed unit differs from --print (%v):\n%s", err, b)
	}
	if out, _ = serviceCLI(t, c, home, "service", "install"); !strings.Contains(out, "unchanged") {
		t.Fatalf("second install:\n%s", out)
	}
	out, _ = serviceCLI(t, c, home, "--json", "service", "status")
	var rep serviceReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Action != "installed" || rep.Path != unit {
		t.Fatalf("status: %v %+v\n%s", err, rep, out)
	}

	if out, _ = serviceCLI(t, c, home, "service", "uninstall"); !strings.Contains(out, "removed "+unit) || !strings.Contains(out, "systemctl --user disable --now") {
		t.Fatalf("uninstall:\n%s", out)
	}
	if _, err := os.Stat(unit); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("unit still there: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(unit)); len(entries) != 0 {
		t.Fatalf("uninstall left %v", entries)
	}
	if out, _ = serviceCLI(t, c, home, "service", "uninstall"); !strings.Contains(out, "not installed") {
		t.Fatalf("second uninstall:\n%s", out)
	}
}
