package workflows

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// dir parses a step's `dir:`. A literal one is checked now; one with
// `${{ }}` is checked by RenderDir when the step starts.
func (p *parser) dir(st *Step, n *yaml.Node, field string) {
	t := p.template(n, field)
	if t == nil {
		return
	}
	if !t.IsLiteral() {
		st.Dir, st.dir = t.String(), t
		return
	}
	d, err := relPath(t.String())
	if err != nil {
		p.fail(n.Line, field, err)
	}
	st.Dir = d
}

// RenderDir returns the step's working directory in env: slash-separated,
// relative to the workspace, checked like a literal `dir:` (not absolute,
// no ".." component).
func (st *Step) RenderDir(env Env) (string, error) {
	if st.dir == nil {
		return st.Dir, nil
	}
	s, err := st.dir.Render(env)
	if err != nil {
		return "", fmt.Errorf("dir: %w", err)
	}
	d, err := relPath(s)
	if err != nil {
		return "", fmt.Errorf("dir: %w", err)
	}
	return d, nil
}
