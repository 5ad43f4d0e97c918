package workflows

import (
	"errors"
	"slices"

	"github.com/expr-lang/expr/ast"

	"github.com/cairnhq/cairn/secrets"
)

// secretRefs collects the secrets an expression names. Only the literal
// form secrets.NAME (or secrets["NAME"]) is allowed, so the engine knows
// before a step starts which secrets to resolve and to redact.
type secretRefs struct {
	names  []string
	idents int // every use of the name `secrets`
	bad    error
}

func (r *secretRefs) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if n.Value == "secrets" {
			r.idents++
		}
	case *ast.MemberNode:
		id, ok := n.Node.(*ast.IdentifierNode)
		if !ok || id.Value != "secrets" {
			return
		}
		s, ok := n.Property.(*ast.StringNode)
		if !ok {
			return
		}
		if err := secrets.ValidateName(s.Value); err != nil && r.bad == nil {
			r.bad = err
		}
		if !slices.Contains(r.names, s.Value) {
			r.names = append(r.names, s.Value)
		}
		r.idents-- // this use is a literal one: balance its identifier
	}
}

// check reports a use of secrets that is not allowed here or not literal.
func (r *secretRefs) check(allowed bool) error {
	switch {
	case r.idents == 0 && len(r.names) == 0:
		return nil
	case !allowed:
		return errors.New("secrets can be used only in a step's env:, exec or shell arguments and http headers or body (they are resolved when the step starts and never stored)")
	case r.bad != nil:
		return r.bad
	case r.idents != 0:
		return errors.New("name each secret literally, as secrets.NAME")
	}
	return nil
}

// Secrets returns the names of the secrets the template reads.
func (t *Template) Secrets() []string {
	var out []string
	for _, p := range t.parts {
		if p.expr == nil {
			continue
		}
		for _, n := range p.expr.secrets {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// Secrets returns the names of the secrets the step reads, in its
// arguments, env, http headers and body.
func (st *Step) Secrets() []string {
	var ts []*Template
	ts = append(ts, st.Exec...)
	ts = append(ts, st.Shell)
	for _, t := range st.Env {
		ts = append(ts, t)
	}
	if h := st.HTTP; h != nil {
		ts = append(ts, h.Body)
		for _, t := range h.Headers {
			ts = append(ts, t)
		}
	}
	var out []string
	for _, t := range ts {
		if t == nil {
			continue
		}
		for _, n := range t.Secrets() {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}
