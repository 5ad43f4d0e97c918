package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// Env is what expressions see when they are evaluated: `input`,
// `steps.<id>.…`, `run.…` and `secrets.NAME`. A step missing from Steps
// (not run yet, skipped) reads as empty: "" for strings, nil for
// exit_code, output and status_code.
type Env struct {
	Input map[string]any
	Steps map[string]StepResult
	Run   RunInfo
	// Secrets are the values of the secrets the template names (see
	// Template.Secrets), resolved by the caller when the step starts.
	Secrets map[string]string
}

// StepResult is the recorded outcome of one step, as expressions see it.
type StepResult struct {
	Status     string // the engine's step status ("succeeded", "failed", "skipped", ...)
	Stdout     string // exec/shell
	Stderr     string // exec/shell
	ExitCode   *int   // exec/shell; nil when no process ran
	Answer     string // ask
	StatusCode int    // http; 0 when no response
	Body       string // http
	// Output is Stdout (exec/shell) or Body (http) parsed as JSON when it is
	// JSON, else nil. Fill it with ParseOutput.
	Output any
}

// RunInfo describes the run an expression is evaluated in.
type RunInfo struct {
	ID      string
	Target  string
	Trigger string

	// Status is "running" during the steps; in `finally:` steps it is how
	// the steps ended: "succeeded", "failed" or "cancelled".
	Status string
	// FailedStep is the id of the step that failed the run ("" when none).
	FailedStep string
}

// exprEnv is the typed environment expressions are compiled against, so
// that `steps.x.stdot` or `inputs.who` fail at load time.
type exprEnv struct {
	Input map[string]any      `expr:"input"`
	Steps map[string]stepView `expr:"steps"`
	Run   runView             `expr:"run"`
	// Secrets is only allowed where Parse lets it (secrets.go).
	Secrets map[string]string `expr:"secrets"`
	// Budget is the evaluation's byte budget (exprbudget.go).
	Budget *exprBudget `expr:"_cairnBudget"`
}

type stepView struct {
	Status     string `expr:"status"`
	Stdout     string `expr:"stdout"`
	Stderr     string `expr:"stderr"`
	ExitCode   any    `expr:"exit_code"`
	Answer     string `expr:"answer"`
	StatusCode any    `expr:"status_code"`
	Body       string `expr:"body"`
	Output     any    `expr:"output"`
}

type runView struct {
	ID      string `expr:"id"`
	Target  string `expr:"target"`
	Trigger string `expr:"trigger"`

	Status     string `expr:"status"`
	FailedStep string `expr:"failed_step"`
}

func (env Env) view() exprEnv {
	v := exprEnv{
		Input:   env.Input,
		Steps:   make(map[string]stepView, len(env.Steps)),
		Run:     runView(env.Run),
		Secrets: env.Secrets,
		Budget:  newExprBudget(),
	}
	if v.Input == nil {
		v.Input = map[string]any{}
	}
	for id, r := range env.Steps {
		sv := stepView{
			Status: r.Status, Stdout: r.Stdout, Stderr: r.Stderr,
			Answer: r.Answer, Body: r.Body, Output: r.Output,
		}
		if r.ExitCode != nil {
			sv.ExitCode = *r.ExitCode
		}
		if r.StatusCode != 0 {
			sv.StatusCode = r.StatusCode
		}
		v.Steps[id] = sv
	}
	return v
}

// Expr is a compiled expression (the text inside `${{ }}`). It is safe for
// concurrent use.
type Expr struct {
	src     string
	prog    *vm.Program
	secrets []string // the secrets it names
}

// CompileExpr compiles an expression against the workflow environment.
// Unknown names (`inputs`) and unknown step fields (`steps.x.stdot`) are
// errors; step ids are not checked (Parse checks them against the file).
func CompileExpr(src string) (*Expr, error) {
	return compileExpr(src, scope{secrets: true})
}

// scope is what an expression may name: the file's step ids (nil: any
// id) and whether it may read secrets.
type scope struct {
	known   map[string]bool
	secrets bool
}

// stepRefs collects the literal step ids an expression names
// (`steps.x`, `steps["x"]`).
type stepRefs struct{ ids []string }

func (r *stepRefs) Visit(node *ast.Node) {
	m, ok := (*node).(*ast.MemberNode)
	if !ok {
		return
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok || id.Value != "steps" {
		return
	}
	if s, ok := m.Property.(*ast.StringNode); ok {
		r.ids = append(r.ids, s.Value)
	}
}

// compileExpr compiles src; when sc.known is not nil, naming a step id
// that is not in it is an error, and so is naming a secret where sc does
// not allow it.
func compileExpr(src string, sc scope) (*Expr, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("empty expression")
	}
	refs := &stepRefs{}
	srefs := &secretRefs{}
	opts := append([]expr.Option{
		expr.Env(exprEnv{}),
		expr.Patch(refs),
		expr.Patch(srefs),
		expr.Function("shellQuote", shellQuoteFn, new(func(string) string)),
	}, budgetOptions()...)
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, fmt.Errorf("compile expression %q: %s", shorten(src), exprMessage(err))
	}
	if sc.known != nil {
		for _, id := range refs.ids {
			if !sc.known[id] {
				return nil, fmt.Errorf("compile expression %q: no step with id %q", shorten(src), shorten(id))
			}
		}
	}
	if err := srefs.check(sc.secrets); err != nil {
		return nil, fmt.Errorf("compile expression %q: %w", shorten(src), err)
	}
	return &Expr{src: src, prog: prog, secrets: srefs.names}, nil
}

// String returns the expression's source text.
func (e *Expr) String() string { return e.src }

// Eval evaluates the expression in env. A runtime error (fetching a field
// of nil, comparing nil with a number) is returned, never a panic.
func (e *Expr) Eval(env Env) (any, error) {
	out, err := runProgram(e.prog, env.view())
	if err != nil {
		return nil, fmt.Errorf("evaluate %q: %s", shorten(e.src), exprMessage(err))
	}
	return out, nil
}

// EvalBool evaluates the expression as a condition: nil is false, a
// non-boolean value is an error.
func (e *Expr) EvalBool(env Env) (bool, error) {
	v, err := e.Eval(env)
	if err != nil {
		return false, err
	}
	switch b := v.(type) {
	case nil:
		return false, nil
	case bool:
		return b, nil
	default:
		return false, fmt.Errorf("evaluate %q: expected a boolean, got %s", shorten(e.src), typeName(v))
	}
}

// exprMessage turns expr's multi-line error (message, snippet, caret) into
// one line.
func exprMessage(err error) string {
	var fe *file.Error
	if errors.As(err, &fe) {
		if fe.Snippet != "" || fe.Column > 0 {
			return fmt.Sprintf("%s (column %d)", fe.Message, fe.Column+1)
		}
		return fe.Message
	}
	return err.Error()
}

func shellQuoteFn(params ...any) (any, error) {
	s, _ := params[0].(string)
	return ShellQuote(s), nil
}

// ShellQuote quotes s for a POSIX shell (single quotes). Expressions can
// call it as shellQuote(x) to put values safely into `shell:` steps.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Template is a string that may hold `${{ expr }}` interpolations mixed
// with text. It is safe for concurrent use.
type Template struct {
	src   string
	parts []part
}

type part struct {
	lit  string
	expr *Expr
}

// ParseTemplate compiles every `${{ }}` in s. "${{" always opens an
// expression; write ${{ "${{" }} for the literal text.
func ParseTemplate(s string) (*Template, error) {
	t, _, err := parseTemplate(s, scope{secrets: true})
	return t, err
}

// Interpolate parses s and renders it in env.
func Interpolate(s string, env Env) (string, error) {
	t, err := ParseTemplate(s)
	if err != nil {
		return "", err
	}
	return t.Render(env)
}

// parseTemplate returns the template, or the error and the byte offset in
// s where the failing expression starts.
func parseTemplate(s string, sc scope) (*Template, int, error) {
	t := &Template{src: s}
	rest, off := s, 0
	for {
		i := strings.Index(rest, "${{")
		if i < 0 {
			if rest != "" {
				t.parts = append(t.parts, part{lit: rest})
			}
			return t, 0, nil
		}
		if i > 0 {
			t.parts = append(t.parts, part{lit: rest[:i]})
		}
		body := rest[i+3:]
		end := closing(body)
		if end < 0 {
			return nil, off + i, errors.New(`"${{" without a closing "}}"`)
		}
		e, err := compileExpr(strings.TrimSpace(body[:end]), sc)
		if err != nil {
			return nil, off + i, err
		}
		t.parts = append(t.parts, part{expr: e})
		consumed := i + 3 + end + 2
		rest, off = rest[consumed:], off+consumed
	}
}

// closing returns the index in s of the "}}" that ends an expression,
// skipping braces and quotes inside it, or -1.
func closing(s string) int {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			switch {
			case c == '\\' && quote != '`':
				i++
			case c == quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'', '`':
			quote = c
		case '{':
			depth++
		case '}':
			if depth > 0 {
				depth--
				continue
			}
			if i+1 < len(s) && s[i+1] == '}' {
				return i
			}
		}
	}
	return -1
}

// String returns the template's source text.
func (t *Template) String() string { return t.src }

// IsLiteral reports whether the template holds no expression.
func (t *Template) IsLiteral() bool {
	for _, p := range t.parts {
		if p.expr != nil {
			return false
		}
	}
	return true
}

// single returns the expression when the template is exactly one
// `${{ expr }}` (surrounding spaces allowed).
func (t *Template) single() *Expr {
	var e *Expr
	for _, p := range t.parts {
		switch {
		case p.expr != nil && e == nil:
			e = p.expr
		case p.expr != nil:
			return nil
		case strings.TrimSpace(p.lit) != "":
			return nil
		}
	}
	return e
}

// Render evaluates the interpolations and returns the text. Values become
// text as: strings as they are, nil as "", numbers in plain notation,
// times in RFC 3339, lists and maps as JSON.
func (t *Template) Render(env Env) (string, error) {
	if len(t.parts) == 1 && t.parts[0].expr == nil {
		return t.parts[0].lit, nil
	}
	view := env.view()
	var b strings.Builder
	for _, p := range t.parts {
		if p.expr == nil {
			b.WriteString(p.lit)
			continue
		}
		v, err := runProgram(p.expr.prog, view)
		if err != nil {
			return "", fmt.Errorf("evaluate %q: %s", shorten(p.expr.src), exprMessage(err))
		}
		b.WriteString(Stringify(v))
	}
	return b.String(), nil
}

// Eval evaluates the template keeping native types: a template that is
// exactly one `${{ expr }}` returns the expression's value (a number, a
// map, a bool...), any other template returns Render's string.
func (t *Template) Eval(env Env) (any, error) {
	if e := t.single(); e != nil {
		return e.Eval(env)
	}
	return t.Render(env)
}

// Stringify renders a value as interpolation does.
func Stringify(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return formatFloat(x)
	case float32:
		return formatFloat(float64(x))
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case time.Duration:
		return x.String()
	case fmt.Stringer:
		return x.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func formatFloat(f float64) string {
	if math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int, int64, float64, float32, json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// ParseOutput returns s parsed as JSON when it is one JSON value (numbers
// as int when integral, else float64), and nil otherwise. It is what the
// engine stores in StepResult.Output.
func ParseOutput(s string) any {
	t := strings.TrimSpace(s)
	if t == "" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil
	}
	return normalizeJSON(v)
}

// normalizeJSON turns json.Number into int (when integral and in range) or
// float64, recursively.
func normalizeJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil && int64(int(i)) == i {
			return int(i)
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeJSON(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalizeJSON(e)
		}
		return x
	}
	return v
}
