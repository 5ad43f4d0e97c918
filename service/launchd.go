package service

import (
	"bytes"
	"encoding/xml"
	"path/filepath"
	"strings"
)

// Label is the launchd label of a workspace's worker.
func Label(workspaceID string) string { return "dev.cairn.worker." + workspaceID }

// launchdPlist renders a LaunchAgent: started at login, kept alive
// (restarted whenever it exits, throttled to once every 10 s), its output
// beside the workspace's worker.log.
func launchdPlist(s Spec) (File, error) {
	label := Label(s.WorkspaceID)
	var b bytes.Buffer
	b.WriteString(xml.Header)
	b.WriteString(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	b.WriteString("<!-- " + Marker + " for ")
	if err := xml.EscapeText(&b, []byte(s.Workspace)); err != nil {
		return File{}, err
	}
	b.WriteString(" -->\n<plist version=\"1.0\">\n<dict>\n")
	key := func(k string) { b.WriteString("\t<key>" + k + "</key>\n") }
	str := func(indent, v string) {
		b.WriteString(indent + "<string>")
		xml.EscapeText(&b, []byte(v)) //nolint:errcheck // bytes.Buffer does not fail
		b.WriteString("</string>\n")
	}
	key("Label")
	str("\t", label)
	key("ProgramArguments")
	b.WriteString("\t<array>\n")
	for _, a := range s.args() {
		str("\t\t", a)
	}
	b.WriteString("\t</array>\n")
	key("WorkingDirectory")
	str("\t", s.Workspace)
	if len(s.Env) > 0 {
		key("EnvironmentVariables")
		b.WriteString("\t<dict>\n")
		for _, kv := range s.Env {
			name, value, _ := strings.Cut(kv, "=")
			b.WriteString("\t")
			key(name)
			str("\t\t", value)
		}
		b.WriteString("\t</dict>\n")
	}
	key("RunAtLoad")
	b.WriteString("\t<true/>\n")
	key("KeepAlive")
	b.WriteString("\t<true/>\n")
	key("ThrottleInterval")
	b.WriteString("\t<integer>10</integer>\n")
	key("ProcessType")
	str("\t", "Background")
	key("StandardErrorPath")
	str("\t", filepath.Join(s.StateRoot, s.WorkspaceID, "service.err"))
	b.WriteString("</dict>\n</plist>\n")
	path := filepath.Join(s.Home, "Library", "LaunchAgents", label+".plist")
	return File{OS: "darwin", Name: label, Path: path, Content: b.Bytes()}, nil
}
