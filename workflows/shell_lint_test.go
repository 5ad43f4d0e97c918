package workflows

import (
	"errors"
	"strings"
	"testing"
)

func TestUnquotedShellInputIsWarnedWithFileAndLine(t *testing.T) {
	t.Parallel()
	src := `name: lint
input:
  type: object
  properties:
    who: {type: string}
    count: {type: integer}
steps:
  - id: quoted
    shell: echo ${{ shellQuote(input.who) }} ${{ input.count }}
  - id: inline
    shell: echo hello ${{ input.who }}
  - id: block
    shell: |
      set -e
      echo ${{ steps.quoted.stdout }}
      echo "${{ upper(input.who) }}"
  - id: exec
    exec: ["echo", "${{ input.who }}"]
`
	w, err := Parse("lint.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, wn := range w.Warnings {
		if !errors.Is(wn, ErrUnquotedShellInput) {
			t.Errorf("warning %v does not wrap ErrUnquotedShellInput", wn)
		}
		got = append(got, wn.Error())
	}
	want := []string{"lint.yaml:11: step \"inline\": shell: ${{ input.who }}", "lint.yaml:16: step \"block\": shell: ${{ upper(input.who) }}"}
	if len(got) != len(want) {
		t.Fatalf("warnings %q; want %d", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) || !strings.Contains(got[i], "shellQuote") {
			t.Errorf("warning %d = %q; want it to start %q and say how to quote", i, got[i], want[i])
		}
	}
}

func TestAskForHuman(t *testing.T) {
	t.Parallel()
	w, err := Parse("a.yaml", []byte("steps:\n  - id: ok\n    ask: Deploy?\n    for: human\n"))
	if err != nil || w.Steps[0].Ask.For != AskForHuman {
		t.Fatalf("for: human: %v, %+v", err, w)
	}
	if _, err := Parse("a.yaml", []byte("steps:\n  - id: ok\n    ask: Deploy?\n    for: robots\n")); err == nil || !strings.Contains(err.Error(), "a.yaml:4") || !strings.Contains(err.Error(), "for: human") {
		t.Fatalf("for: robots: %v", err)
	}
	if _, err := Parse("a.yaml", []byte("steps:\n  - id: ok\n    shell: echo\n    for: human\n")); err == nil || !strings.Contains(err.Error(), "applies only to ask") {
		t.Fatalf("for: on a shell step: %v", err)
	}
}
