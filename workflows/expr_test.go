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

// evalCase is a source and what evaluating it in testEnv gives: want, or
// an error containing the text of a want of type wantErr.
type evalCase struct {
	src  string
	want any
}

type wantErr string

// checkEval runs every case as a parallel subtest named by its source;
// eval compiles and evaluates it (failing the test where it must compile).
func checkEval(t *testing.T, cases []evalCase, eval func(t *testing.T, src string, env Env) (any, error)) {
	t.Helper()
	env := testEnv() // no "later" step: it has not run
	for _, c := range cases {
		t.Run(c.src, func(t *testing.T) {
			t.Parallel()
			got, err := eval(t, c.src, env)
			if want, ok := c.want.(wantErr); ok {
				if err == nil || !strings.Contains(err.Error(), string(want)) {
					t.Errorf("err = %v, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %#v, want %#v", got, c.want)
			}
		})
	}
}

// compiled compiles the expression src, failing the test if it does not.
func compiled(t *testing.T, src string) *Expr {
	t.Helper()
	e, err := CompileExpr(src)
	if err != nil {
		t.Fatalf("CompileExpr: %v", err)
	}
	return e
}

func TestTemplateRender(t *testing.T) {
	t.Parallel()
	checkEval(t, []evalCase{
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
	}, func(t *testing.T, src string, env Env) (any, error) { return Interpolate(src, env) })
}

// evalTemplate parses src (failing the test where it must parse) and
// evaluates it keeping native types.
func evalTemplate(t *testing.T, src string, env Env) (any, error) {
	tmpl, err := ParseTemplate(src)
	if err != nil {
		t.Fatalf("ParseTemplate: %v", err)
	}
	return tmpl.Eval(env)
}

func TestTemplateEvalNativeTypes(t *testing.T) {
	t.Parallel()
	checkEval(t, []evalCase{
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
	}, evalTemplate)
}

func TestTemplateErrors(t *testing.T) {
	t.Parallel()
	checkEval(t, []evalCase{
		{"${{ input.who", wantErr(`"${{" without a closing "}}"`)},
		{"a ${{ }} b", wantErr("empty expression")},
		{"${{ inputs }}", wantErr("unknown name inputs")},
		{"${{ steps.x.stdot }}", wantErr("has no field stdot")},
		{"${{ 1 + }}", wantErr("unexpected token EOF")},
		{`${{ "unterminated }}`, wantErr(`"${{" without a closing "}}"`)},
	}, func(t *testing.T, src string, env Env) (any, error) { return ParseTemplate(src) })
}

// TestEvalRuntimeErrors: bad values at run time are errors, never panics,
// and each fits on one line.
func TestEvalRuntimeErrors(t *testing.T) {
	t.Parallel()
	checkEval(t, []evalCase{
		{"steps.later.output.count", wantErr(`evaluate "steps.later.output.count": cannot fetch count from <nil>`)},
		{"input.missing.deeper", wantErr("cannot fetch deeper from <nil>")},
		{"steps.later.exit_code > 0", wantErr("invalid operation")},
		{"input.who / 2", wantErr("invalid operation")},
	}, func(t *testing.T, src string, env Env) (any, error) {
		v, err := compiled(t, src).Eval(env)
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("error spans lines: %q", err)
		}
		return v, err
	})
}

func TestEvalBool(t *testing.T) {
	t.Parallel()
	checkEval(t, []evalCase{
		{"true", true},
		{`steps.ask.answer == "yes"`, true},
		{`steps.ask.answer == "no"`, false},
		{"input.missing", false},
		{"input.flag && input.n > 1", true},
		{"input.who", wantErr(`expected a boolean, got string`)},
		{"input.n", wantErr(`expected a boolean, got number`)},
	}, func(t *testing.T, src string, env Env) (any, error) { return compiled(t, src).EvalBool(env) })
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
