package service

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn/internal/atomicfile"
)

func writeFile(path string, data []byte) error { return atomicfile.WriteFile(path, data, 0o600) }

// Commands is what the service manager must be told after Install
// (action "install") or before Uninstall (action "uninstall").
func Commands(f File, action string) [][]string {
	switch f.OS + " " + action {
	case "linux install":
		return [][]string{{"systemctl", "--user", "daemon-reload"}, {"systemctl", "--user", "enable", "--now", f.Name}}
	case "linux uninstall":
		return [][]string{{"systemctl", "--user", "disable", "--now", f.Name}}
	case "linux uninstalled":
		return [][]string{{"systemctl", "--user", "daemon-reload"}}
	case "darwin install":
		domain := "gui/" + strconv.Itoa(os.Getuid())
		return [][]string{{"launchctl", "bootout", domain + "/" + f.Name}, {"launchctl", "bootstrap", domain, f.Path}}
	case "darwin uninstall":
		return [][]string{{"launchctl", "bootout", "gui/" + strconv.Itoa(os.Getuid()) + "/" + f.Name}}
	}
	return nil
}

// Reachable reports whether the service manager for f can be told
// anything from here: its tool is on PATH and, for systemd, a user bus
// answers (none under sudo, in a container, or over ssh without a login
// session). why says what is missing.
func Reachable(f File) (ok bool, why string) {
	tool := "systemctl"
	if f.OS == "darwin" {
		tool = "launchctl"
	}
	if _, err := exec.LookPath(tool); err != nil {
		return false, tool + " is not on PATH"
	}
	if f.OS == "linux" && !userBus() {
		return false, "no systemd user bus (DBUS_SESSION_BUS_ADDRESS or $XDG_RUNTIME_DIR/bus)"
	}
	return true, ""
}

func userBus() bool {
	if a := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); strings.HasPrefix(a, "unix:path=") {
		p := strings.TrimPrefix(a, "unix:path=")
		p, _, _ = strings.Cut(p, ",")
		_, err := os.Stat(p)
		return err == nil
	}
	rt := os.Getenv("XDG_RUNTIME_DIR")
	if rt == "" {
		return false
	}
	fi, err := os.Stat(filepath.Join(rt, "bus"))
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// Run runs one manager command, bounded in time; a launchctl bootout of
// a service that is not loaded is not an error.
func Run(ctx context.Context, argv []string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil && !(argv[0] == "launchctl" && argv[1] == "bootout") {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 2048 {
			msg = msg[len(msg)-2048:]
		}
		return fmt.Errorf("run %s: %w: %s", strings.Join(argv, " "), err, msg)
	}
	return nil
}
