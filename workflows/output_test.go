package workflows

import (
	"strings"
	"testing"
)

func TestStepOutput(t *testing.T) {
	t.Parallel()
	wf, err := Parse("x.yaml", []byte("steps:\n  - id: a\n    output: file\n    shell: echo hi\n  - id: b\n    output: journal\n    exec: [\"true\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if wf.Steps[0].Output != OutputFile || wf.Steps[1].Output != OutputJournal {
		t.Fatalf("outputs %q %q", wf.Steps[0].Output, wf.Steps[1].Output)
	}
	for src, want := range map[string]string{
		"steps:\n  - id: a\n    output: disk\n    shell: echo\n":   `expected journal (the default) or file, got "disk"`,
		"steps:\n  - id: a\n    output: file\n    sleep: 1s\n":     "`output` applies only to exec and shell steps",
		"steps:\n  - id: a\n    output: [file]\n    shell: echo\n": "output",
	} {
		if _, err := Parse("x.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", src, err, want)
		}
	}
}
