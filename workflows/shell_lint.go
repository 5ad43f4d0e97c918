package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/expr-lang/expr/ast"
	exprparser "github.com/expr-lang/expr/parser"
	"gopkg.in/yaml.v3"
)

// ErrUnquotedShellInput is wrapped by the warning of a `shell:` step that
// puts the run's input into the script without quoting it: an input like
// "$(rm -rf ~)" would run. Write ${{ shellQuote(input.x) }} instead.
var ErrUnquotedShellInput = errors.New("interpolates input without shellQuote: a value like \"$(id)\" would run as a command; write ${{ shellQuote(input.NAME) }}, or pass it in env: and use \"$NAME\"")

// lintShell reports each `${{ }}` of a shell script (the scalar n) that
// reads the input without shellQuote. Inputs whose schema type is a
// number or a boolean cannot carry a command and are not reported.
func (p *parser) lintShell(n *yaml.Node, field string, schema []byte) {
	s, ok := p.raw(n, field)
	if !ok {
		return
	}
	safe := scalarInputs(schema)
	rest, off := s, 0
	for {
		i := strings.Index(rest, "${{")
		if i < 0 {
			return
		}
		body := rest[i+3:]
		end := closing(body)
		if end < 0 {
			return // reported by the template's parse
		}
		if src := strings.TrimSpace(body[:end]); unquotedInput(src, safe) {
			p.warns = append(p.warns, &Error{File: p.file, Line: exprLine(n, s, off+i), Field: field, Err: fmt.Errorf("${{ %s }} %w", shorten(src), ErrUnquotedShellInput)})
		}
		consumed := i + 3 + end + 2
		rest, off = rest[consumed:], off+consumed
	}
}

// unquotedInput reports whether expression src reads input (other than
// the properties in safe) and is not a shellQuote(...) call.
func unquotedInput(src string, safe map[string]bool) bool {
	tree, err := exprparser.Parse(src)
	if err != nil {
		return false
	}
	if c, ok := tree.Node.(*ast.CallNode); ok {
		if id, ok := c.Callee.(*ast.IdentifierNode); ok && id.Value == "shellQuote" {
			return false
		}
	}
	v := &inputReads{safe: safe, safeIDs: map[ast.Node]bool{}}
	ast.Walk(&tree.Node, v)
	for _, id := range v.ids {
		if !v.safeIDs[id] {
			return true
		}
	}
	return false
}

// inputReads collects the reads of the input in an expression: every
// `input` identifier, and those read through a safe property
// (input.count of an integer input).
type inputReads struct {
	safe    map[string]bool
	ids     []ast.Node
	safeIDs map[ast.Node]bool
}

func (v *inputReads) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.MemberNode:
		id, ok := n.Node.(*ast.IdentifierNode)
		prop, isStr := n.Property.(*ast.StringNode)
		if ok && id.Value == "input" && isStr && v.safe[prop.Value] {
			v.safeIDs[id] = true
		}
	case *ast.IdentifierNode:
		if n.Value == "input" {
			v.ids = append(v.ids, n)
		}
	}
}

// scalarInputs are the input properties whose schema type is a number,
// an integer or a boolean.
func scalarInputs(schema []byte) map[string]bool {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	out := map[string]bool{}
	for name, prop := range s.Properties {
		if t, ok := prop.Type.(string); ok && (t == "integer" || t == "number" || t == "boolean") {
			out[name] = true
		}
	}
	return out
}

// RefuseWarnings is an error when w has warnings (the workflows:
// unquoted_shell_input: error setting), else nil.
func RefuseWarnings(w *Workflow) error {
	errs := make([]error, 0, len(w.Warnings))
	for _, wn := range w.Warnings {
		errs = append(errs, wn)
	}
	return errors.Join(errs...)
}
