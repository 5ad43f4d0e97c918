package service

import (
	"fmt"
	"path/filepath"
	"strings"
)

// UnitName is the systemd unit of a workspace's worker.
func UnitName(workspaceID string) string { return "cairn-worker-" + workspaceID + ".service" }

// systemdUnit renders a user unit: it restarts the worker whenever it
// exits (a crash, or finding another worker holding the lock and exiting:
// it comes back to take over once that one idles out), and starts at
// login, or at boot with lingering enabled.
func systemdUnit(s Spec) File {
	cfg := s.ConfigHome
	if cfg == "" {
		cfg = filepath.Join(s.Home, ".config")
	}
	args := s.args()
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = systemdQuote(a)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s for %s.\n", Marker, s.Workspace)
	b.WriteString("# Remove it with: mcp-host service uninstall --workspace " + s.Workspace + "\n")
	b.WriteString("[Unit]\n")
	fmt.Fprintf(&b, "Description=Cairn worker for %s\n", systemdEscape(s.Workspace))
	b.WriteString("Documentation=https://github.com/cairnhq/cairn#service\n")
	b.WriteString("\n[Service]\n")
	b.WriteString("Type=simple\n")
	fmt.Fprintf(&b, "ExecStart=%s\n", strings.Join(quoted, " "))
	fmt.Fprintf(&b, "WorkingDirectory=%s\n", systemdEscape(s.Workspace)) // the whole value: no quotes
	for _, kv := range s.Env {
		fmt.Fprintf(&b, "Environment=%s\n", systemdQuote(kv))
	}
	b.WriteString("Restart=always\n")
	b.WriteString("RestartSec=10\n")
	// The worker stops its steps within a few seconds of SIGTERM.
	b.WriteString("KillMode=mixed\n")
	b.WriteString("TimeoutStopSec=30\n")
	b.WriteString("\n[Install]\n")
	b.WriteString("WantedBy=default.target\n")
	name := UnitName(s.WorkspaceID)
	return File{OS: "linux", Name: name, Path: filepath.Join(cfg, "systemd", "user", name), Content: []byte(b.String())}
}

// systemdEscape protects the specifier and variable characters of a
// unit-file value.
func systemdEscape(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	return strings.ReplaceAll(s, "$", "$$")
}

// systemdQuote is one ExecStart word: bare when it is plain, else in
// double quotes with backslash escapes.
func systemdQuote(s string) string {
	s = systemdEscape(s)
	if s != "" && !strings.ContainsAny(s, " \t\"'\\;") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}
