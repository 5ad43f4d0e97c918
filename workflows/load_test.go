package workflows

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/ids"
)

func TestLoadDirBrokenAmongGood(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "loaddir")
	got, errs := LoadDir(dir)
	names := make([]string, 0, len(got))
	for name := range got {
		names = append(names, name)
	}
	slices.Sort(names)
	if want := []string{"deploy", "weekly-report"}; !slices.Equal(names, want) {
		t.Errorf("loaded %v, want %v", names, want)
	}
	if len(errs) != 1 {
		t.Fatalf("errors = %v, want one for broken.yaml", errs)
	}
	want := filepath.Join(dir, "broken.yaml") + `:4: step "a" has both exec and shell; choose one`
	if errs[0].Error() != want {
		t.Errorf("error = %q, want %q", errs[0], want)
	}
	if got["deploy"].Description != "Build and ship" || got["weekly-report"].File != filepath.Join(dir, "report.yml") {
		t.Errorf("deploy = %+v, weekly-report = %+v", got["deploy"], got["weekly-report"])
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "loaddir")
	tests := []struct {
		name    string
		want    string // workflow name, or "" for an error
		wantErr string
		is      error
	}{
		{name: "deploy", want: "deploy"},
		{name: "weekly-report", want: "weekly-report"},
		{name: "report", wantErr: `no workflow named "report"`, is: ErrNotFound},
		{name: "nope", wantErr: `no workflow named "nope"`, is: ErrNotFound},
		{name: "broken", wantErr: `broken.yaml:4: step "a" has both exec and shell`},
		{name: "notes", wantErr: `no workflow named "notes"`, is: ErrNotFound},
		{name: "hidden", wantErr: `no workflow named "hidden"`, is: ErrNotFound},
		{name: "../deploy", wantErr: `invalid workflow name "../deploy"`},
		{name: "a\x00b", wantErr: `invalid workflow name "a\x00b"`},
		{name: strings.Repeat("x", 1024), wantErr: "longer than 128 characters"},
	}
	for _, tt := range tests {
		t.Run(shorten(tt.name), func(t *testing.T) {
			t.Parallel()
			w, err := Load(dir, tt.name)
			if tt.wantErr == "" {
				if err != nil || w.Name != tt.want {
					t.Fatalf("Load = %v, %v; want %s", w, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
			var nf *NotFoundError
			if tt.is == ErrNotFound && (!errors.As(err, &nf) || nf.Name != tt.name) {
				t.Errorf("not a *NotFoundError for %q: %#v", tt.name, err)
			}
		})
	}
	_, err := Load(dir, "../deploy")
	var inv *ids.InvalidError
	if !errors.As(err, &inv) {
		t.Errorf("hostile name: not an *ids.InvalidError: %T", err)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

const okBody = "steps:\n  - id: x\n    exec: [\"true\"]\n"

func TestLoadDirMissing(t *testing.T) {
	t.Parallel()
	got, errs := LoadDir(filepath.Join(t.TempDir(), "nope"))
	if len(got) != 0 || len(errs) != 0 {
		t.Errorf("LoadDir(missing) = %v, %v", got, errs)
	}
	_, err := Load(filepath.Join(t.TempDir(), "nope"), "x")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("Load(missing dir) = %v", err)
	}
}

func TestLoadDirNotADir(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "file")
	write(t, f, "x")
	if _, errs := LoadDir(f); len(errs) != 1 || !strings.Contains(errs[0].Error(), "read workflows dir") {
		t.Errorf("errs = %v", errs)
	}
}

func TestLoadDirDuplicateNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "deploy.yaml"), okBody)
	write(t, filepath.Join(dir, "other.yaml"), "name: deploy\n"+okBody)
	write(t, filepath.Join(dir, "fine.yaml"), okBody)
	got, errs := LoadDir(dir)
	if _, ok := got["deploy"]; ok || got["fine"] == nil || len(got) != 1 {
		t.Errorf("loaded %v", got)
	}
	if len(errs) != 2 {
		t.Fatalf("errs = %v", errs)
	}
	for _, err := range errs {
		var dup *DuplicateError
		if !errors.As(err, &dup) || dup.Name != "deploy" || !slices.Equal(dup.Files, []string{"deploy.yaml", "other.yaml"}) {
			t.Errorf("err = %v", err)
		}
	}
	if _, err := Load(dir, "deploy"); err == nil || !strings.Contains(err.Error(), `workflow name "deploy" is defined by more than one file: deploy.yaml, other.yaml`) {
		t.Errorf("Load(deploy) = %v", err)
	}
}

func TestLoadDirSymlinks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "workflows")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "outside.yaml"), okBody)
	write(t, filepath.Join(dir, "real.yaml"), okBody)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Skipf("symlinks unavailable: %v", err)
		}
	}
	must(os.Symlink("real.yaml", filepath.Join(dir, "alias.yaml")))
	must(os.Symlink("../outside.yaml", filepath.Join(dir, "escape.yaml")))
	must(os.Symlink(filepath.Join(root, "outside.yaml"), filepath.Join(dir, "escape-abs.yaml")))
	must(os.Symlink("missing.yaml", filepath.Join(dir, "dangling.yaml")))
	must(os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o700))

	got, errs := LoadDir(dir)
	if got["real"] == nil || got["alias"] == nil || len(got) != 2 {
		t.Errorf("loaded %v, want real and alias", got)
	}
	want := []string{
		"dangling.yaml: resolve file:",
		"escape-abs.yaml: symlink points outside the workflows dir",
		"escape.yaml: symlink points outside the workflows dir",
		"sub.yaml: not a regular file",
	}
	if len(errs) != len(want) {
		t.Fatalf("errs = %v", errs)
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("errs[%d] = %v, want %q", i, errs[i], w)
		}
	}
}

// TestLoadDirThroughSymlinkedDir: the workflows dir itself may be a
// symlink (dotfile setups); files inside it still load.
func TestLoadDirThroughSymlinkedDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(real, "a.yaml"), okBody)
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	got, errs := LoadDir(link)
	if got["a"] == nil || len(errs) != 0 {
		t.Errorf("LoadDir = %v, %v", got, errs)
	}
}

func TestLoadDirTooLarge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "big.yaml"), "# "+strings.Repeat("x", MaxFileSize)+"\n"+okBody)
	_, errs := LoadDir(dir)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "big.yaml: file is larger than 1048576 bytes") {
		t.Errorf("errs = %v", errs)
	}
}
