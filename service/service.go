// Package service writes, and removes, the per-user service definition
// that keeps a workspace's `mcp-host worker` running with no editor open:
// a systemd user unit on Linux, a launchd agent on macOS.
//
// There is one service per workspace, named after the workspace id: a
// worker serves exactly one workspace (it holds that workspace's
// locks/worker), so one unit per workspace keeps a failing workspace from
// taking the others down, and install and uninstall touch nothing but
// their own workspace.
//
// Render is pure (the OS is a parameter, so both formats are produced and
// tested everywhere); Install and Uninstall write and remove the file, and
// Manager says what the service manager is told.
package service

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairnhq/cairn/internal/ids"
)

// Marker is the first line of every file this package writes; Uninstall
// removes only a file that carries it.
const Marker = "Written by mcp-host service install"

// Spec is what the service runs.
type Spec struct {
	Binary      string // absolute path of mcp-host
	StateRoot   string // absolute
	Workspace   string // absolute, canonical
	WorkspaceID string // the workspace id (12 hex digits)
	// Home is the user's home folder; ConfigHome is XDG_CONFIG_HOME (""
	// means Home/.config). Both decide where the file goes.
	Home       string
	ConfigHome string
	// Env is what the worker's runs see of PATH, LANG and TZ ("NAME=value",
	// taken where install ran): a service manager starts its services with
	// a bare PATH, without the user's ~/bin or ~/go/bin.
	Env []string
}

// ServiceEnv are the variables Env may carry (all in the run allowlist).
var ServiceEnv = []string{"PATH", "LANG", "TZ"}

// File is a rendered service definition.
type File struct {
	OS      string // "linux" or "darwin"
	Name    string // the systemd unit name or the launchd label
	Path    string // where Install writes it
	Content []byte
}

// Render returns the service definition for goos ("linux" or "darwin").
func Render(goos string, s Spec) (File, error) {
	if err := s.check(); err != nil {
		return File{}, err
	}
	switch goos {
	case "linux":
		return systemdUnit(s), nil
	case "darwin":
		return launchdPlist(s)
	}
	return File{}, fmt.Errorf("render service: %s has no supported service manager (systemd on Linux, launchd on macOS); run `mcp-host worker --idle 0` from your own supervisor", goos)
}

func (s Spec) check() error {
	for name, p := range map[string]string{"binary": s.Binary, "state root": s.StateRoot, "workspace": s.Workspace, "home": s.Home} {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("render service: %s %q is not an absolute path", name, p)
		}
		if strings.ContainsAny(p, "\n\r\x00") {
			return fmt.Errorf("render service: %s %q contains a line break", name, p)
		}
	}
	for _, kv := range s.Env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !slices.Contains(ServiceEnv, name) || strings.ContainsAny(kv, "\n\r\x00") {
			return fmt.Errorf("render service: environment %q is not one of %v as NAME=value on one line", kv, ServiceEnv)
		}
	}
	if s.ConfigHome != "" && !filepath.IsAbs(s.ConfigHome) {
		return fmt.Errorf("render service: XDG_CONFIG_HOME %q is not an absolute path", s.ConfigHome)
	}
	if err := ids.Validate("workspace id", s.WorkspaceID); err != nil {
		return fmt.Errorf("render service: %w", err)
	}
	return nil
}

// args is the worker's command line: it never idles out, since the
// service manager is there to keep it up.
func (s Spec) args() []string {
	return []string{s.Binary, "--state", s.StateRoot, "--workspace", s.Workspace, "worker", "--idle", "0"}
}

// Result says what Install or Uninstall did.
type Result int

const (
	Unchanged Result = iota // the file already had this content / was absent
	Written                 // the file was created or replaced
	Removed                 // the file was removed
)

// Install writes f unless its path already holds the same content.
func Install(f File) (Result, error) {
	old, err := os.ReadFile(f.Path)
	switch {
	case err == nil && string(old) == string(f.Content):
		return Unchanged, nil
	case err == nil && !strings.Contains(string(old), Marker):
		return Unchanged, fmt.Errorf("install service: %s exists and was not written by mcp-host; move it away first", f.Path)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return Unchanged, fmt.Errorf("install service: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		return Unchanged, fmt.Errorf("install service: %w", err)
	}
	if err := writeFile(f.Path, f.Content); err != nil {
		return Unchanged, fmt.Errorf("install service: %w", err)
	}
	return Written, nil
}

// Uninstall removes the file Install wrote at f.Path; a missing file is
// Unchanged, and a file without the Marker is refused.
func Uninstall(f File) (Result, error) {
	old, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return Unchanged, nil
	}
	if err != nil {
		return Unchanged, fmt.Errorf("uninstall service: %w", err)
	}
	if !strings.Contains(string(old), Marker) {
		return Unchanged, fmt.Errorf("uninstall service: %s was not written by mcp-host; remove it yourself", f.Path)
	}
	if err := os.Remove(f.Path); err != nil {
		return Unchanged, fmt.Errorf("uninstall service: %w", err)
	}
	return Removed, nil
}

// State is what Status finds at f.Path.
type State string

const (
	NotInstalled State = "not installed"
	Installed    State = "installed"
	Outdated     State = "installed, different from what install would write now (run service install again)"
)

// Status compares f with what is on disk.
func Status(f File) (State, error) {
	old, err := os.ReadFile(f.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return NotInstalled, nil
	case err != nil:
		return NotInstalled, fmt.Errorf("service status: %w", err)
	case string(old) == string(f.Content):
		return Installed, nil
	}
	return Outdated, nil
}
