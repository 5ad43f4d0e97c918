package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/runs"
)

// TestOutputFileKeepsTheWholeOutput: a shell step with output: file prints
// 20 KB in 200 lines and one 100 KB line, past the journal's caps (4 KiB
// per run, 1 KiB per line). The file holds every byte; the journal holds
// records naming it; runs show says where it is; runs delete removes it.
func TestOutputFileKeepsTheWholeOutput(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, map[string]string{"big.yaml": `steps:
  - id: print
    output: file
    shell: |
      i=0; while [ $i -lt 200 ]; do printf '%099d\n' $i; i=$((i+1)); done
      head -c 100000 /dev/zero | tr '\0' z; echo
      echo oops >&2
`})
	if err := os.WriteFile(filepath.Join(c.root, ".cairn", "config.yaml"), []byte("journal:\n  per_run: 4KiB\n  per_line: 1KiB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := c.run("run", "big")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	code, out, _ := c.run("runs", "--json")
	var list struct{ Runs []runs.Run }
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Runs) != 1 {
		t.Fatalf("runs: %s", out)
	}
	id := list.Runs[0].ID
	code, out, _ = c.run("runs", "show", id, "--json")
	var r runs.Run
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Steps) != 1 {
		t.Fatalf("runs show: %s", out)
	}
	// The step ran under a step supervisor (a workspace with a SQLite
	// store), which wrote the file.
	st := c.openStore()
	ledger, err := st.Ledger(context.Background(), id)
	st.Close()
	if err != nil || len(ledger) != 1 || !strings.Contains(string(ledger[0].Detail), `"supervised":true`) {
		t.Fatalf("the step did not run under a supervisor: %+v %v", ledger, err)
	}
	file := r.Steps[0].OutputFile
	if want := filepath.Join(c.ws.OutputDir(), id, "print.1.log"); file != want {
		t.Fatalf("output file %q, want %q", file, want)
	}
	if code, out, _ = c.run("runs", "show", id); !strings.Contains(out, "output in "+file) {
		t.Fatalf("runs show does not say where the output is:\n%s", out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// stdout's lines in order, the long one whole, and stderr's line
	// wherever it came.
	var stdout []string
	oops := 0
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "oops" {
			oops++
		} else {
			stdout = append(stdout, l)
		}
	}
	if oops != 1 || len(stdout) != 201 || stdout[0] != strings.Repeat("0", 99) || stdout[199] != fmt.Sprintf("%099d", 199) || stdout[200] != strings.Repeat("z", 100000) {
		t.Fatalf("file: %d stdout lines, %d stderr (%d bytes), want 201 and 1 with the long one whole", len(stdout), oops, len(b))
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v", fi.Mode())
	}
	journal, err := os.ReadFile(c.journalPath(id))
	if err != nil {
		t.Fatal(err)
	}
	if len(journal) > 4<<10 || !strings.Contains(string(journal), `"type":"output_file"`) || !strings.Contains(string(journal), `"lines":202`) || strings.Contains(string(journal), "zzzz") {
		t.Fatalf("journal (%d bytes):\n%s", len(journal), journal)
	}
	if code, _, errs = c.run("runs", "delete", id); code != 0 {
		t.Fatalf("runs delete: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Dir(file)); !os.IsNotExist(err) {
		t.Fatalf("the run's folder survived runs delete: %v", err)
	}
}
