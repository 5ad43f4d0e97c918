package service

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/systemdtest"
)

func spec(t *testing.T) Spec {
	t.Helper()
	home := t.TempDir()
	ws := filepath.Join(home, "my work %x")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Binary: bin, StateRoot: filepath.Join(home, ".cairn"), Workspace: ws, WorkspaceID: "0123456789ab", Home: home,
		Env: []string{"PATH=" + home + "/my bin:/usr/bin:/bin", "TZ=Europe/Paris"}}
}

func TestSystemdUnitVerifies(t *testing.T) {
	t.Parallel()
	s := spec(t)
	f, err := Render("linux", s)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(s.Home, ".config", "systemd", "user", "cairn-worker-0123456789ab.service"); f.Path != want {
		t.Fatalf("path %s, want %s", f.Path, want)
	}
	unit := string(f.Content)
	for _, want := range []string{
		"[Unit]\n", "[Service]\n", "[Install]\n", "WantedBy=default.target\n", "Restart=always\n",
		`ExecStart=` + s.Binary + ` --state ` + s.StateRoot + ` --workspace "` + strings.ReplaceAll(s.Workspace, "%", "%%") + `" worker --idle 0` + "\n",
		`Environment="PATH=` + s.Home + `/my bin:/usr/bin:/bin"` + "\n", "Environment=TZ=Europe/Paris\n",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
	out, err := systemdtest.Verify(t, f.Name, f.Content)
	if err != nil || bytes.Contains(out, []byte(f.Name)) {
		t.Fatalf("systemd-analyze verify: %v\n%s\n%s", err, out, unit)
	}
}

// TestSystemdVerifyCatchesMistakes: the verify above fails on a unit
// systemd would warn about (verify exits 0 on an unknown key or a bad
// value, so its output is read too), and on one whose program is missing.
func TestSystemdVerifyCatchesMistakes(t *testing.T) {
	t.Parallel()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for what, unit := range map[string]string{
		"unknown key": "[Service]\nExecStart=" + bin + "\nRestrt=always\n",
		"bad value":   "[Service]\nExecStart=" + bin + "\nRestart=sometimes\n",
		"no program":  "[Service]\nExecStart=/nonexistent/mcp-host worker\n",
	} {
		out, err := systemdtest.Verify(t, "cairn-bad.service", []byte(unit))
		if err == nil && !bytes.Contains(out, []byte("cairn-bad.service")) {
			t.Errorf("%s: verify passed:\n%s", what, out)
		}
	}
}

func TestSystemdHonoursXDGConfigHome(t *testing.T) {
	t.Parallel()
	s := spec(t)
	s.ConfigHome = filepath.Join(s.Home, "cfg")
	f, err := Render("linux", s)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(s.Home, "cfg", "systemd", "user", f.Name); f.Path != want {
		t.Fatalf("path %s, want %s", f.Path, want)
	}
}

// plist is the structure of a launchd property list: a dict of keys
// followed by values.
type plistValue struct {
	XMLName xml.Name
	Text    string       `xml:",chardata"`
	Items   []plistValue `xml:",any"`
}

func TestLaunchdPlistStructure(t *testing.T) {
	t.Parallel()
	s := spec(t)
	s.Workspace += " <&>"
	f, err := Render("darwin", s)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(s.Home, "Library", "LaunchAgents", "dev.cairn.worker.0123456789ab.plist"); f.Path != want {
		t.Fatalf("path %s, want %s", f.Path, want)
	}
	dec := xml.NewDecoder(bytes.NewReader(f.Content))
	var root plistValue
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("parse plist: %v\n%s", err, f.Content)
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if cd, ok := tok.(xml.CharData); err != nil || !ok || len(bytes.TrimSpace(cd)) > 0 {
			t.Fatalf("content after </plist>: %v %v", tok, err)
		}
	}
	if root.XMLName.Local != "plist" || len(root.Items) != 1 || root.Items[0].XMLName.Local != "dict" {
		t.Fatalf("want <plist><dict>, got %+v", root)
	}
	d := root.Items[0].Items
	if len(d)%2 != 0 {
		t.Fatalf("dict has %d items, not key/value pairs", len(d))
	}
	vals := map[string]plistValue{}
	for i := 0; i < len(d); i += 2 {
		if d[i].XMLName.Local != "key" {
			t.Fatalf("item %d is <%s>, want <key>", i, d[i].XMLName.Local)
		}
		vals[d[i].Text] = d[i+1]
	}
	if v := vals["Label"]; v.XMLName.Local != "string" || v.Text != f.Name {
		t.Errorf("Label = %+v, want %s", v, f.Name)
	}
	var args []string
	for _, a := range vals["ProgramArguments"].Items {
		args = append(args, a.Text)
	}
	if want := s.args(); strings.Join(args, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("ProgramArguments = %q, want %q", args, want)
	}
	for _, k := range []string{"RunAtLoad", "KeepAlive"} {
		if vals[k].XMLName.Local != "true" {
			t.Errorf("%s = <%s>, want <true/>", k, vals[k].XMLName.Local)
		}
	}
	if v := vals["WorkingDirectory"]; v.Text != s.Workspace {
		t.Errorf("WorkingDirectory = %q, want %q", v.Text, s.Workspace)
	}
	var env []string
	if e := vals["EnvironmentVariables"].Items; len(e) == 4 && e[0].XMLName.Local == "key" && e[2].XMLName.Local == "key" {
		env = []string{e[0].Text + "=" + e[1].Text, e[2].Text + "=" + e[3].Text}
	}
	if strings.Join(env, "\x00") != strings.Join(s.Env, "\x00") {
		t.Errorf("EnvironmentVariables = %+v, want %q", vals["EnvironmentVariables"], s.Env)
	}
}

func TestRenderRefuses(t *testing.T) {
	t.Parallel()
	s := spec(t)
	if _, err := Render("plan9", s); err == nil {
		t.Error("plan9: no error")
	}
	bad := s
	bad.Binary = "mcp-host"
	if _, err := Render("linux", bad); err == nil {
		t.Error("relative binary: no error")
	}
	bad = s
	bad.Workspace += "\nExecStartPre=/bin/evil"
	if _, err := Render("linux", bad); err == nil {
		t.Error("line break in the workspace: no error")
	}
	bad = s
	bad.Env = []string{"LD_PRELOAD=/tmp/x.so"}
	if _, err := Render("linux", bad); err == nil {
		t.Error("an environment variable beyond PATH, LANG and TZ: no error")
	}
	bad = s
	bad.WorkspaceID = "../x"
	if _, err := Render("linux", bad); err == nil {
		t.Error("bad workspace id: no error")
	}
}

func TestInstallIsIdempotentAndUninstallRemovesIt(t *testing.T) {
	t.Parallel()
	for _, goos := range []string{"linux", "darwin"} {
		t.Run(goos, func(t *testing.T) {
			t.Parallel()
			f, err := Render(goos, spec(t))
			if err != nil {
				t.Fatal(err)
			}
			if st, _ := Status(f); st != NotInstalled {
				t.Fatalf("status before install: %s", st)
			}
			if r, err := Install(f); err != nil || r != Written {
				t.Fatalf("install: %v %v", r, err)
			}
			fi, err := os.Stat(f.Path)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("installed file: %v %v", fi, err)
			}
			if r, err := Install(f); err != nil || r != Unchanged {
				t.Fatalf("second install: %v %v, want unchanged", r, err)
			}
			if st, _ := Status(f); st != Installed {
				t.Fatalf("status after install: %s", st)
			}
			changed := f
			changed.Content = append([]byte(nil), f.Content...)
			changed.Content = append(changed.Content, '\n')
			if st, _ := Status(changed); st != Outdated {
				t.Fatalf("status with other content: %s", st)
			}
			if r, err := Install(changed); err != nil || r != Written {
				t.Fatalf("install of new content: %v %v", r, err)
			}
			if r, err := Uninstall(f); err != nil || r != Removed {
				t.Fatalf("uninstall: %v %v", r, err)
			}
			if _, err := os.Stat(f.Path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("file still there: %v", err)
			}
			if entries, _ := os.ReadDir(filepath.Dir(f.Path)); len(entries) != 0 {
				t.Fatalf("left behind: %v", entries)
			}
			if r, err := Uninstall(f); err != nil || r != Unchanged {
				t.Fatalf("second uninstall: %v %v", r, err)
			}
		})
	}
}

func TestForeignFileIsLeftAlone(t *testing.T) {
	t.Parallel()
	f, err := Render("linux", spec(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.Path, []byte("[Unit]\nDescription=mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(f); err == nil {
		t.Error("install over a foreign file: no error")
	}
	if _, err := Uninstall(f); err == nil {
		t.Error("uninstall of a foreign file: no error")
	}
	if b, _ := os.ReadFile(f.Path); string(b) != "[Unit]\nDescription=mine\n" {
		t.Errorf("foreign file changed: %q", b)
	}
}
