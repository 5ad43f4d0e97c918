package workflows

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDirInterpolates: `dir: ${{ input.d }}` is rendered when the step
// starts, and checked then like a literal dir.
func TestDirInterpolates(t *testing.T) {
	t.Parallel()
	w := mustParse(t, `
steps:
  - id: a
    exec: [pwd]
    dir: ${{ input.d }}/sub
`)
	st := w.Steps[0]
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{name: "relative", in: "x", want: "x/sub"},
		{name: "cleaned", in: "./x//y", want: "x/y/sub"},
		{name: "absolute", in: "/etc", err: "absolute"},
		{name: "parent", in: "..", err: "leaves the workspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := st.RenderDir(Env{Input: map[string]any{"d": tc.in}})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("RenderDir(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("RenderDir(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
	lit := mustParse(t, "steps:\n  - id: a\n    exec: [pwd]\n    dir: ./sub//dir/\n").Steps[0]
	if d, err := lit.RenderDir(Env{}); err != nil || d != "sub/dir" {
		t.Fatalf("literal dir: %q, %v", d, err)
	}
}

// TestPlainFieldsRefuseExpressions: a field read as written refuses
// `${{ }}` at load, naming the file and the line.
func TestPlainFieldsRefuseExpressions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src string
		line      int
		field     string
	}{
		{"name", "name: ${{ input.n }}\nsteps:\n  - id: a\n    exec: [true]\n", 1, "name"},
		{"description", "description: hi ${{ run.id }}\nsteps:\n  - id: a\n    exec: [true]\n", 1, "description"},
		{"timeout", "steps:\n  - id: a\n    exec: [true]\n    timeout: ${{ input.t }}\n", 4, "timeout"},
		{"sleep", "steps:\n  - id: a\n    sleep: ${{ input.t }}\n", 3, "sleep"},
		{"choices", "steps:\n  - id: a\n    ask: ok?\n    choices: [yes, \"${{ input.c }}\"]\n", 4, "choices"},
		{"method", "steps:\n  - id: a\n    http:\n      url: https://example.com/\n      method: ${{ input.m }}\n", 5, "method"},
		{"cron", "on:\n  - cron: \"${{ input.c }}\"\nsteps:\n  - id: a\n    exec: [true]\n", 2, "cron"},
		{"files", "on:\n  - files: \"${{ input.g }}\"\nsteps:\n  - id: a\n    exec: [true]\n", 2, "files"},
		{"input default", "input:\n  type: object\n  properties:\n    d: {type: string, default: \"${{ run.id }}\"}\nsteps:\n  - id: a\n    exec: [true]\n", 4, "input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.src))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Parse: %v; want an *Error", err)
			}
			if pe.Line != tc.line || !strings.Contains(pe.Field, tc.field) || !strings.Contains(err.Error(), "does not take ${{ }} expressions") {
				t.Fatalf("Parse: %v (line %d, field %q); want line %d, field %s, refusing the expression", err, pe.Line, pe.Field, tc.line, tc.field)
			}
			if !strings.HasPrefix(err.Error(), "t.yaml:"+strconv.Itoa(tc.line)+":") {
				t.Fatalf("error %q does not start with file:line", err)
			}
		})
	}
}

// TestSecretsWhereAllowed: env, exec and shell arguments, http headers and
// body may read secrets, and the step lists them; other fields refuse
// them at load, as do non-literal uses and bad names.
func TestSecretsWhereAllowed(t *testing.T) {
	t.Parallel()
	w := mustParse(t, `
steps:
  - id: a
    exec: [curl, "-u", "${{ secrets.USER }}"]
    env: {TOKEN: "${{ secrets.TOKEN }}"}
  - id: b
    shell: echo ${{ secrets.SCRIPT_KEY }}
  - id: c
    http:
      url: https://example.com/
      method: POST
      headers: {Authorization: "Bearer ${{ secrets.API_TOKEN }}"}
      body: '{"k": "${{ secrets["BODY_KEY"] }}"}'
`)
	want := [][]string{{"TOKEN", "USER"}, {"SCRIPT_KEY"}, {"API_TOKEN", "BODY_KEY"}}
	for i, st := range w.Steps {
		if got := st.Secrets(); !slices.Equal(got, want[i]) {
			t.Errorf("step %s: Secrets() = %v, want %v", st.ID, got, want[i])
		}
	}
	h, err := w.Steps[2].HTTP.Headers["Authorization"].Render(Env{Secrets: map[string]string{"API_TOKEN": "s3"}})
	if err != nil || h != "Bearer s3" {
		t.Fatalf("render header: %q, %v", h, err)
	}

	for _, tc := range []struct{ name, src, msg string }{
		{"url", "steps:\n  - id: a\n    http:\n      url: \"https://x.example/${{ secrets.T }}\"\n", "can be used only in"},
		{"ask", "steps:\n  - id: a\n    ask: \"${{ secrets.T }}?\"\n", "can be used only in"},
		{"if", "steps:\n  - id: a\n    exec: [true]\n    if: ${{ secrets.T == \"x\" }}\n", "can be used only in"},
		{"result", "steps:\n  - id: a\n    exec: [true]\nresult: ${{ secrets.T }}\n", "can be used only in"},
		{"dir", "steps:\n  - id: a\n    exec: [true]\n    dir: ${{ secrets.T }}\n", "can be used only in"},
		{"dynamic", "steps:\n  - id: a\n    exec: [echo, \"${{ secrets[input.k] }}\"]\n", "literally"},
		{"whole", "steps:\n  - id: a\n    exec: [echo, \"${{ toJSON(secrets) }}\"]\n", "literally"},
		{"bad name", "steps:\n  - id: a\n    exec: [echo, \"${{ secrets.lower }}\"]\n", "bad secret name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Parse: %v; want an error with %q", err, tc.msg)
			}
		})
	}
}
