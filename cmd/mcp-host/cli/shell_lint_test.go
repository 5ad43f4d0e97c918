package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A shell: step interpolating input without shellQuote is reported with
// file:line by list and run; workflows.unquoted_shell_input: error makes
// it a load error that run refuses.
func TestUnquotedShellInputWarnings(t *testing.T) {
	t.Parallel()
	greet := "name: greet\ninput:\n  type: object\n  properties:\n    who: {type: string, default: world}\nsteps:\n  - id: hi\n    shell: echo hello ${{ input.who }}\n"
	c := newCLIWS(t, map[string]string{"greet.yaml": greet})
	want := "greet.yaml:8: step \"hi\": shell: ${{ input.who }}"

	code, out, errs := c.run("list")
	if code != 0 || !strings.Contains(out, "greet") || !strings.Contains(errs, "warning: ") || !strings.Contains(errs, want) {
		t.Fatalf("list: exit %d, out %q, stderr %q; want the warning with %q", code, out, errs, want)
	}
	code, out, errs = c.run("run", "greet")
	if code != 0 || !strings.Contains(out, "hello world") || !strings.Contains(errs, want) {
		t.Fatalf("run: exit %d, out %q, stderr %q; want it to run and warn", code, out, errs)
	}

	cfg := filepath.Join(c.root, ".cairn", "config.yaml")
	if err := os.WriteFile(cfg, []byte("workflows:\n  unquoted_shell_input: error\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := c.run("run", "greet"); code == 0 || !strings.Contains(errs, want) || !strings.Contains(errs, "shellQuote") {
		t.Fatalf("run under unquoted_shell_input: error: exit %d, stderr %q; want it refused with the file:line", code, errs)
	}
	code, out, _ = c.run("list", "--json")
	var listed struct {
		Targets []targetInfo `json:"targets"`
		Errors  []string     `json:"errors"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed.Targets) != 0 || len(listed.Errors) != 1 || !strings.Contains(listed.Errors[0], want) {
		t.Fatalf("list --json under error: exit %d, %s; want greet among the errors only", code, out)
	}
	if err := os.WriteFile(cfg, []byte("workflows:\n  unquoted_shell_input: sometimes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := c.run("list"); code == 0 || !strings.Contains(errs, "warn or error") {
		t.Fatalf("bad setting: exit %d, stderr %q", code, errs)
	}
}
