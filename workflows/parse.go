package workflows

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairnhq/cairn/internal/ids"
)

// Parse parses and validates one workflow file. name is the file's path or
// name: it appears in errors, and without a `name:` field the workflow is
// named after it (the base name without .yaml or .yml). Every expression is
// compiled and the input schema is compiled here, so a workflow that parses
// cannot fail later for a reason visible in the file.
//
// The error is an *Error, or several joined with errors.Join.
func Parse(name string, src []byte) (*Workflow, error) {
	p := &parser{file: name}
	w := p.workflow(src)
	if len(p.errs) > 0 {
		slices.SortStableFunc(p.errs, func(a, b error) int {
			return a.(*Error).Line - b.(*Error).Line
		})
		if len(p.errs) == 1 {
			return nil, p.errs[0]
		}
		return nil, errors.Join(p.errs...)
	}
	w.Warnings = p.warns
	return w, nil
}

var (
	topKeys  = []string{"name", "description", "input", "steps", "result", "on", "finally"}
	kindKeys = []string{"exec", "shell", "ask", "sleep", "http"}
	stepKeys = append([]string{"id", "if", "timeout", "retry", "safe_to_repeat", "env", "dir", "choices", "default", "continue_on_error", "output", "for"}, kindKeys...)
	// keys that only some kinds take; the others are errors, so that a
	// misplaced key is not silently ignored.
	keyKinds = map[string][]StepKind{
		"timeout": {KindExec, KindShell, KindHTTP, KindAsk},
		"retry":   {KindExec, KindShell, KindHTTP},
		"env":     {KindExec, KindShell},
		"dir":     {KindExec, KindShell},
		"output":  {KindExec, KindShell},
		"choices": {KindAsk},
		"default": {KindAsk},
		"for":     {KindAsk},
	}
	httpKeys  = []string{"method", "url", "headers", "body", "expect_status"}
	envName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	httpToken = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	yamlErr   = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
)

type parser struct {
	file   string
	errs   []error
	warns  []*Error        // problems that do not stop the load (shell_lint.go)
	known  map[string]bool // step ids declared in the file
	lines  map[string]int  // the line of each id in known
	schema []byte          // the input schema as JSON, once parsed
}

type entry struct{ key, val *yaml.Node }

func (p *parser) fail(line int, field string, err error) {
	if len(p.errs) < maxProblems {
		p.errs = append(p.errs, &Error{File: p.file, Line: line, Field: field, Err: err})
	}
}

func (p *parser) failf(line int, field, format string, args ...any) {
	p.fail(line, field, fmt.Errorf(format, args...))
}

func (p *parser) workflow(src []byte) *Workflow {
	if len(src) > MaxFileSize {
		p.failf(0, "", "file is larger than %d bytes", MaxFileSize)
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.failf(0, "", "empty file: a workflow needs at least `steps:`")
		} else {
			p.yamlError(err)
		}
		return nil
	}
	var second yaml.Node
	if err := dec.Decode(&second); err == nil {
		p.failf(second.Line, "", "more than one YAML document: one workflow per file")
		return nil
	} else if !errors.Is(err, io.EOF) {
		p.yamlError(err)
		return nil
	}
	if len(doc.Content) == 0 {
		p.failf(0, "", "empty file: a workflow needs at least `steps:`")
		return nil
	}
	root := doc.Content[0]
	if !p.noAliases(root) {
		return nil
	}
	m, _ := p.mapping(root, "", topKeys)
	if m == nil {
		return nil
	}
	w := &Workflow{File: p.file, Source: bytes.Clone(src)}

	if e, ok := m["name"]; ok {
		if s, ok := p.str(e.val, "name"); ok {
			if err := ids.Validate("workflow name", s); err != nil {
				p.fail(e.val.Line, "name", err)
			}
			w.Name = s
		}
	} else {
		w.Name = DefaultName(p.file)
		if err := ids.Validate("workflow name", w.Name); err != nil {
			p.fail(0, "", fmt.Errorf("name the workflow with `name:` or rename the file: %w", err))
		}
	}
	if e, ok := m["description"]; ok {
		w.Description, _ = p.str(e.val, "description")
	}
	if e, ok := m["input"]; ok {
		p.input(w, e.val)
		p.schema = w.schemaJSON
	}
	if e, ok := m["steps"]; ok {
		w.Steps = p.steps(e.val, "steps")
	} else {
		p.failf(root.Line, "", "missing `steps:`: a workflow needs at least one step")
	}
	if e, ok := m["finally"]; ok {
		w.Finally = p.steps(e.val, "finally")
	}
	if e, ok := m["result"]; ok {
		w.Result = p.template(e.val, "result")
	}
	if e, ok := m["on"]; ok {
		w.On = p.triggers(e.val)
	}
	return w
}

// DefaultName is the workflow name a file gets without a `name:` field:
// its base name without .yaml or .yml.
func DefaultName(file string) string {
	base := path.Base(filepath.ToSlash(file))
	for _, ext := range []string{".yaml", ".yml"} {
		if s, ok := strings.CutSuffix(base, ext); ok {
			return s
		}
	}
	return base
}

func (p *parser) yamlError(err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlErr.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	p.fail(line, "", fmt.Errorf("malformed YAML: %s", msg))
}

// noAliases refuses YAML aliases: they make line numbers lie and can blow
// up in size. (Anchors alone are harmless.)
func (p *parser) noAliases(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode {
		p.failf(n.Line, "", "YAML aliases (*%s) are not supported; write the value out", n.Value)
		return false
	}
	ok := true
	for _, c := range n.Content {
		ok = p.noAliases(c) && ok
	}
	return ok
}

// template parses a string with `${{ }}` interpolations, checking step
// references against the file's step ids. It may not read secrets.
func (p *parser) template(n *yaml.Node, field string) *Template {
	return p.parseTemplate(n, field, false)
}

// secretTemplate is template for the fields that may read secrets: a
// step's env values, exec and shell arguments, http headers and body.
func (p *parser) secretTemplate(n *yaml.Node, field string) *Template {
	return p.parseTemplate(n, field, true)
}

func (p *parser) parseTemplate(n *yaml.Node, field string, secrets bool) *Template {
	s, ok := p.raw(n, field)
	if !ok {
		return nil
	}
	t, off, err := parseTemplate(s, scope{known: p.known, secrets: secrets})
	if err != nil {
		p.fail(exprLine(n, s, off), field, err)
		return nil
	}
	return t
}

// exprLine is the file line of offset off in n's text: exact for literal
// block scalars (`|`), the scalar's first line otherwise.
func exprLine(n *yaml.Node, s string, off int) int {
	if n.Style&yaml.LiteralStyle != 0 {
		return n.Line + 1 + strings.Count(s[:off], "\n")
	}
	return n.Line
}

// condition parses `if:`: one expression, with or without `${{ }}`, whose
// type, when known at load time, is boolean.
func (p *parser) condition(n *yaml.Node, field string) *Expr {
	e := p.conditionExpr(n, field)
	if e == nil {
		return nil
	}
	if t := e.prog.Node().Type(); t != nil && t.Kind() != reflect.Bool && t.Kind() != reflect.Interface {
		p.failf(n.Line, field, "must be a condition (true or false), but %q is %s", shorten(e.src), goKind(t))
		return nil
	}
	return e
}

func goKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Float64:
		return "a number"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return t.String()
}

func (p *parser) conditionExpr(n *yaml.Node, field string) *Expr {
	if b, ok := boolValue(n); ok {
		e, _ := compileExpr(strconv.FormatBool(b), scope{})
		return e
	}
	s, ok := p.nonEmptyRaw(n, field)
	if !ok {
		return nil
	}
	src := strings.TrimSpace(s)
	if strings.Contains(src, "${{") {
		t, off, err := parseTemplate(s, scope{known: p.known})
		if err != nil {
			p.fail(exprLine(n, s, off), field, err)
			return nil
		}
		e := t.single()
		if e == nil {
			p.failf(n.Line, field, "must be one expression, like ${{ steps.check.exit_code == 0 }}")
		}
		return e
	}
	e, err := compileExpr(src, scope{known: p.known})
	if err != nil {
		p.fail(n.Line, field, err)
		return nil
	}
	return e
}

// relPath checks a workspace-relative path or glob: not absolute, no ".."
// component, no NUL; it returns the cleaned, slash-separated form.
func relPath(s string) (string, error) {
	switch {
	case strings.TrimSpace(s) == "":
		return "", errors.New("must not be empty")
	case strings.ContainsRune(s, 0):
		return "", errors.New("must not contain a NUL byte")
	case strings.HasPrefix(s, "/") || strings.HasPrefix(s, `\`) || filepath.IsAbs(s) || filepath.VolumeName(s) != "":
		return "", fmt.Errorf("%q is absolute; write it relative to the workspace", shorten(s))
	}
	for _, c := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' }) {
		if c == ".." {
			return "", fmt.Errorf("%q leaves the workspace (has a \"..\" component)", shorten(s))
		}
	}
	return path.Clean(s), nil
}
