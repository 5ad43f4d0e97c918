package workflows

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func intp(i int) *int { return &i }

func testEnv() Env {
	return Env{
		Input: map[string]any{"who": "world", "n": 3, "f": 1e6, "half": 0.5, "flag": true, "tags": []any{"a", "b"}, "obj": map[string]any{"k": "v"}},
		Steps: map[string]StepResult{
			"greet":  {Status: "succeeded", Stdout: "hello world\n", ExitCode: intp(0)},
			"json":   {Status: "succeeded", Stdout: `{"count": 2, "items": ["x"]}`, ExitCode: intp(0), Output: ParseOutput(`{"count": 2, "items": ["x"]}`)},
			"fail":   {Status: "failed", Stderr: "boom", ExitCode: intp(2)},
			"ask":    {Status: "succeeded", Answer: "yes"},
			"ping":   {Status: "succeeded", StatusCode: 204, Body: ""},
			"nested": {Output: map[string]any{"a": map[string]any{"b": 1}}},
		},
		Run: RunInfo{ID: "run_01", Target: "hello", Trigger: "manual"},
	}
}

func TestTemplateRender(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src, want string
	}{
		{"plain text", "plain text"},
		{"", ""},
		{"hello ${{ input.who }}!", "hello world!"},
		{"${{input.who}}", "world"},
		{"${{ input.who }} and ${{ input.who }}", "world and world"},
		{"n=${{ input.n }} f=${{ input.f }} h=${{ input.half }}", "n=3 f=1000000 h=0.5"},
		{"${{ input.flag }}", "true"},
		{"${{ input.tags }}", `["a","b"]`},
		{"${{ input.obj }}", `{"k":"v"}`},
		{"[${{ input.missing }}]", "[]"},
		{"${{ steps.greet.stdout }}", "hello world\n"},
		{"${{ trim(steps.greet.stdout) }}", "hello world"},
		{"code ${{ steps.fail.exit_code }}", "code 2"},
		{"${{ steps.json.output.count + 1 }}", "3"},
		{"${{ steps.ping.status_code }}", "204"},
		{"${{ run.id }}/${{ run.target }}/${{ run.trigger }}", "run_01/hello/manual"},
		{`${{ {"a": 1}.a }}`, "1"},
		{`${{ "}}" }}`, "}}"},
		{`${{ '${{' }} literal`, "${{ literal"},
		{"${{ input.n > 2 ? \"big\" : \"small\" }}", "big"},
		{"echo ${{ shellQuote(\"it's\") }}", `echo 'it'\''s'`},
		{"${{ toJSON(steps.json.output.items) }}", "[\n  \"x\"\n]"},
		// Steps that have not run read as empty.
		{"[${{ steps.later.stdout }}][${{ steps.later.exit_code }}][${{ steps.later.status }}]", "[][][]"},
		{"${{ steps.later.output?.count }}", ""},
	}
	env := testEnv() // no "later" step: it has not run
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			got, err := Interpolate(tt.src, env)
			if err != nil {
				t.Fatalf("Interpolate: %v", err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTemplateEvalNativeTypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want any
	}{
		{"${{ input.n }}", 3},
		{"  ${{ input.n * 2 }}  ", 6},
		{"${{ input.half }}", 0.5},
		{"${{ input.flag }}", true},
		{"${{ input.tags }}", []any{"a", "b"}},
		{"${{ steps.json.output }}", map[string]any{"count": 2, "items": []any{"x"}}},
		{"${{ steps.ask.answer == \"yes\" }}", true},
		{"${{ steps.greet.exit_code == 0 }}", true},
		{"${{ steps.later.exit_code }}", nil},
		{"${{ steps.later.exit_code == 0 }}", false},
		{"${{ steps.later.status == \"\" }}", true},
		{"${{ input.missing }}", nil},
		{"${{ 1..3 }}", []int{1, 2, 3}},
		{"n=${{ input.n }}", "n=3"}, // mixed text: a string
		{"${{ input.n }}${{ input.n }}", "33"},
		{"literal", "literal"},
	}
	env := testEnv()
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			tmpl, err := ParseTemplate(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.Eval(env)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestTemplateErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src, want string
	}{
		{"${{ input.who", `"${{" without a closing "}}"`},
		{"a ${{ }} b", "empty expression"},
		{"${{ inputs }}", "unknown name inputs"},
		{"${{ steps.x.stdot }}", "has no field stdot"},
		{"${{ 1 + }}", "unexpected token EOF"},
		{`${{ "unterminated }}`, `"${{" without a closing "}}"`},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			_, err := ParseTemplate(tt.src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestEvalRuntimeErrors: bad values at run time are errors, never panics.
func TestEvalRuntimeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src, want string
	}{
		{"steps.later.output.count", `evaluate "steps.later.output.count": cannot fetch count from <nil>`},
		{"input.missing.deeper", "cannot fetch deeper from <nil>"},
		{"steps.later.exit_code > 0", "invalid operation"},
		{"input.who / 2", "invalid operation"},
	}
	env := testEnv()
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			e, err := CompileExpr(tt.src)
			if err != nil {
				t.Fatalf("CompileExpr: %v", err)
			}
			_, err = e.Eval(env)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestEvalBool(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src     string
		want    bool
		wantErr string
	}{
		{"true", true, ""},
		{`steps.ask.answer == "yes"`, true, ""},
		{`steps.ask.answer == "no"`, false, ""},
		{"input.missing", false, ""},
		{"input.flag && input.n > 1", true, ""},
		{"input.who", false, `expected a boolean, got string`},
		{"input.n", false, `expected a boolean, got number`},
	}
	env := testEnv()
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			e, err := CompileExpr(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.EvalBool(env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestEvalEmptyEnv: the zero Env is usable (no nil-map panics).
func TestEvalEmptyEnv(t *testing.T) {
	t.Parallel()
	got, err := Interpolate("[${{ input.x }}|${{ steps.a.stdout }}|${{ run.id }}]", Env{})
	if err != nil || got != "[||]" {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestParseOutput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want any
	}{
		{"", nil},
		{"hello\n", nil},
		{"42\n", 42},
		{"1.5", 1.5},
		{"true", true},
		{`"s"`, "s"},
		{`{"a": [1, 2.5, {"b": null}]}`, map[string]any{"a": []any{1, 2.5, map[string]any{"b": nil}}}},
		{"1 2", nil},
		{"[1] ]", nil},
		{`{"a": 1}` + "\n" + `{"a": 2}`, nil},
		{"99999999999999999999", 1e20},
	}
	for _, tt := range tests {
		if got := ParseOutput(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseOutput(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
	}
}

func TestStringify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   any
		want string
	}{
		{nil, ""},
		{"s", "s"},
		{7, "7"},
		{int64(-7), "-7"},
		{2.0, "2"},
		{1e21, "1e+21"},
		{false, "false"},
		{time.Date(2025, 3, 30, 2, 30, 0, 0, time.UTC), "2025-03-30T02:30:00Z"},
		{90 * time.Second, "1m30s"},
		{map[string]any{"b": 1, "a": "x"}, `{"a":"x","b":1}`},
		{[]int{1, 2}, "[1,2]"},
	}
	for _, tt := range tests {
		if got := Stringify(tt.in); got != tt.want {
			t.Errorf("Stringify(%#v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "''", "a b": "'a b'", "it's": `'it'\''s'`, "$(rm -rf /)": "'$(rm -rf /)'"} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
