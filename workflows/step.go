package workflows

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairnhq/cairn/internal/ids"
)

// steps parses a list of steps (list is "steps" or "finally"). Ids are
// unique across lists; a list's expressions may name its own steps and
// those of the lists parsed before it.
func (p *parser) steps(n *yaml.Node, list string) []*Step {
	if n.Kind != yaml.SequenceNode {
		p.failf(n.Line, list, "expected a list of steps, got %s", kindName(n))
		return nil
	}
	if len(n.Content) == 0 {
		p.failf(n.Line, list, "must have at least one step")
		return nil
	}
	// First pass: the ids, so expressions can be checked against them.
	if p.known == nil {
		p.known, p.lines = map[string]bool{}, map[string]int{}
	}
	first := p.lines
	stepIDs := make([]string, len(n.Content)) // "" when missing or invalid
	for i, s := range n.Content {
		field := fmt.Sprintf("%s[%d]", list, i)
		if s.Kind != yaml.MappingNode {
			continue
		}
		var idNode *yaml.Node
		for j := 0; j+1 < len(s.Content); j += 2 {
			if s.Content[j].Value == "id" {
				idNode = s.Content[j+1]
			}
		}
		if idNode == nil {
			p.failf(s.Line, field, "missing `id:`")
			continue
		}
		id, ok := p.str(idNode, field+": id")
		if !ok {
			continue
		}
		if err := ids.Validate("step id", id); err != nil {
			p.fail(idNode.Line, field+": id", err)
			continue
		}
		if line, dup := first[id]; dup {
			p.failf(idNode.Line, field+": id", "duplicate step id %q (first at line %d)", id, line)
			continue
		}
		first[id] = idNode.Line
		p.known[id] = true
		stepIDs[i] = id
	}
	steps := make([]*Step, 0, len(n.Content))
	for i, s := range n.Content {
		if st := p.step(list, i, s, stepIDs[i]); st != nil {
			steps = append(steps, st)
		}
	}
	return steps
}

// step parses one step; id is its valid, unique id or "" (already reported).
func (p *parser) step(list string, i int, n *yaml.Node, id string) *Step {
	label := fmt.Sprintf("%s[%d]", list, i)
	if id != "" {
		label = fmt.Sprintf("step %q", id)
	}
	m, _ := p.mapping(n, label, stepKeys)
	if m == nil {
		return nil
	}
	st := &Step{ID: id, Line: n.Line, Retry: Retry{Attempts: 1}, Dir: "."}

	var kinds []string
	for _, k := range kindKeys {
		if _, ok := m[k]; ok {
			kinds = append(kinds, k)
		}
	}
	switch len(kinds) {
	case 0:
		p.failf(n.Line, "", "%s has nothing to do: add one of %s", label, strings.Join(kindKeys, ", "))
		return nil
	case 1:
		st.Kind = StepKind(kinds[0])
	default:
		p.failf(m[kinds[1]].key.Line, "", "%s has both %s; choose one", label, andList(kinds))
		return nil
	}
	for _, key := range stepKeys {
		allowed, limited := keyKinds[key]
		if e, ok := m[key]; ok && limited && !slices.Contains(allowed, st.Kind) {
			names := make([]string, len(allowed))
			for j, k := range allowed {
				names[j] = string(k)
			}
			p.failf(e.key.Line, label, "`%s` applies only to %s steps, not %s", key, andList(names), st.Kind)
		}
	}

	body := m[kinds[0]].val
	field := join(label, kinds[0])
	switch st.Kind {
	case KindExec:
		p.execStep(st, body, field)
	case KindShell:
		if _, ok := p.nonEmptyRaw(body, field); ok {
			st.Shell = p.secretTemplate(body, field)
			p.lintShell(body, field, p.schema)
		}
	case KindAsk:
		p.askStep(st, m, body, label)
	case KindSleep:
		st.Sleep, _ = p.duration(body, field, false)
	case KindHTTP:
		st.HTTP = p.httpStep(body, field)
	}

	if e, ok := m["if"]; ok {
		st.If = p.condition(e.val, join(label, "if"))
	}
	if e, ok := m["timeout"]; ok && slices.Contains(keyKinds["timeout"], st.Kind) {
		st.Timeout, _ = p.duration(e.val, join(label, "timeout"), false)
	}
	if e, ok := m["retry"]; ok && slices.Contains(keyKinds["retry"], st.Kind) {
		st.Retry = p.retry(e.val, join(label, "retry"))
	}
	st.SafeToRepeat = defaultSafe(st)
	if e, ok := m["safe_to_repeat"]; ok {
		if b, ok := p.boolean(e.val, join(label, "safe_to_repeat")); ok {
			st.SafeToRepeat = b
		}
	}
	if e, ok := m["continue_on_error"]; ok {
		st.ContinueOnError, _ = p.boolean(e.val, join(label, "continue_on_error"))
	}
	if e, ok := m["env"]; ok && slices.Contains(keyKinds["env"], st.Kind) {
		st.Env = p.env(e.val, join(label, "env"))
	}
	if e, ok := m["output"]; ok && slices.Contains(keyKinds["output"], st.Kind) {
		if s, ok := p.str(e.val, join(label, "output")); ok {
			switch Output(s) {
			case OutputFile:
				st.Output = OutputFile
			case "journal":
			default:
				p.failf(e.val.Line, join(label, "output"), "expected journal (the default) or file, got %q", shorten(s))
			}
		}
	}
	if e, ok := m["dir"]; ok && slices.Contains(keyKinds["dir"], st.Kind) {
		p.dir(st, e.val, join(label, "dir"))
	}
	return st
}

// defaultSafe is safe_to_repeat when the file does not say: steps whose
// repetition is harmless (waiting, asking again, reading over HTTP) are
// safe; running a program or changing something over HTTP is not.
func defaultSafe(st *Step) bool {
	switch st.Kind {
	case KindSleep, KindAsk:
		return true
	case KindHTTP:
		return st.HTTP != nil && (st.HTTP.Method == http.MethodGet || st.HTTP.Method == http.MethodHead)
	}
	return false
}

func (p *parser) execStep(st *Step, n *yaml.Node, field string) {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		p.failf(n.Line, field, "expected a list of arguments like [\"echo\", \"hi\"]; for a command line use `shell:`")
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.failf(n.Line, field, "expected a list of arguments, got %s", kindName(n))
		return
	}
	if len(n.Content) == 0 {
		p.failf(n.Line, field, "must have at least the program to run")
		return
	}
	for i, a := range n.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		if i == 0 {
			if _, ok := p.nonEmptyRaw(a, f); !ok {
				continue
			}
		}
		if t := p.secretTemplate(a, f); t != nil {
			st.Exec = append(st.Exec, t)
		}
	}
}

func (p *parser) askStep(st *Step, m map[string]entry, body *yaml.Node, label string) {
	field := join(label, "ask")
	if _, ok := p.nonEmptyRaw(body, field); !ok {
		return
	}
	st.Ask = &Ask{Text: p.template(body, field)}
	if e, ok := m["choices"]; ok {
		f := join(label, "choices")
		choices, ok := p.strList(e.val, f)
		if ok && len(choices) == 0 {
			p.failf(e.val.Line, f, "must not be empty (leave `choices` out to accept any answer)")
		}
		seen := map[string]bool{}
		for i, c := range choices {
			switch {
			case strings.TrimSpace(c) == "":
				p.failf(e.val.Content[i].Line, f, "choice %d is empty", i+1)
			case seen[c]:
				p.failf(e.val.Content[i].Line, f, "choice %q is listed twice", shorten(c))
			}
			seen[c] = true
		}
		st.Ask.Choices = choices
	}
	if e, ok := m["for"]; ok {
		f := join(label, "for")
		if v, ok := p.str(e.val, f); ok {
			if v != AskForHuman {
				p.failf(e.val.Line, f, "%q is not who may answer: write `for: human` (only a person answers), or leave it out (agents may answer too)", shorten(v))
			}
			st.Ask.For = v
		}
	}
	if e, ok := m["default"]; ok {
		f := join(label, "default")
		if d, ok := p.str(e.val, f); ok {
			st.Ask.Default, st.Ask.HasDefault = d, true
			if _, ok := m["timeout"]; !ok {
				p.failf(e.key.Line, f, "a default answer needs a `timeout` to wait for")
			}
			if len(st.Ask.Choices) > 0 && !slices.Contains(st.Ask.Choices, d) {
				p.failf(e.val.Line, f, "%q is not one of the choices (%s)", shorten(d), strings.Join(st.Ask.Choices, ", "))
			}
		}
	}
}

func (p *parser) httpStep(n *yaml.Node, field string) *HTTPRequest {
	m, ok := p.mapping(n, field, httpKeys)
	if !ok && m == nil {
		return nil
	}
	h := &HTTPRequest{Method: http.MethodGet}
	if e, ok := m["method"]; ok {
		if s, ok := p.nonEmpty(e.val, join(field, "method")); ok {
			s = strings.ToUpper(strings.TrimSpace(s))
			if !httpToken.MatchString(s) {
				p.failf(e.val.Line, join(field, "method"), "bad method %q", shorten(s))
			}
			h.Method = s
		}
	}
	if e, ok := m["url"]; ok {
		f := join(field, "url")
		if s, ok := p.nonEmptyRaw(e.val, f); ok {
			h.URL = p.template(e.val, f)
			if h.URL != nil && h.URL.IsLiteral() {
				if err := CheckURL(s); err != nil {
					p.fail(e.val.Line, f, err)
				}
			}
		}
	} else {
		p.failf(n.Line, field, "missing `url:`")
	}
	if e, ok := m["headers"]; ok {
		f := join(field, "headers")
		if hm := p.stringMap(e.val, f, func(k string) error {
			if !httpToken.MatchString(k) {
				return fmt.Errorf("bad header name %q", shorten(k))
			}
			return nil
		}); hm != nil {
			h.Headers = hm
		}
	}
	if e, ok := m["body"]; ok {
		h.Body = p.secretTemplate(e.val, join(field, "body"))
	}
	if e, ok := m["expect_status"]; ok {
		h.ExpectStatus = p.statuses(e.val, join(field, "expect_status"))
	}
	return h
}

func (p *parser) statuses(n *yaml.Node, field string) []int {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
		if len(items) == 0 {
			p.failf(n.Line, field, "must not be empty")
		}
	}
	var out []int
	for _, c := range items {
		code, ok := p.integer(c, field)
		if !ok {
			continue
		}
		if code < 100 || code > 599 {
			p.failf(c.Line, field, "%d is not an HTTP status (100-599)", code)
			continue
		}
		out = append(out, code)
	}
	return out
}

func (p *parser) stringMap(n *yaml.Node, field string, checkKey func(string) error) map[string]*Template {
	if n.Kind != yaml.MappingNode {
		p.failf(n.Line, field, "expected a mapping, got %s", kindName(n))
		return nil
	}
	out := make(map[string]*Template, len(n.Content)/2)
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.failf(k.Line, field, "keys must be plain strings, got %s", kindName(k))
			continue
		}
		if err := checkKey(k.Value); err != nil {
			p.fail(k.Line, field, err)
			continue
		}
		if line, dup := first[k.Value]; dup {
			p.failf(k.Line, field, "duplicate key %q (first at line %d)", k.Value, line)
			continue
		}
		first[k.Value] = k.Line
		if t := p.secretTemplate(v, join(field, k.Value)); t != nil {
			out[k.Value] = t
		}
	}
	return out
}

func (p *parser) env(n *yaml.Node, field string) map[string]*Template {
	return p.stringMap(n, field, func(k string) error {
		if !envName.MatchString(k) {
			return fmt.Errorf("bad environment variable name %q (use letters, digits and _, not starting with a digit)", shorten(k))
		}
		return nil
	})
}

func (p *parser) retry(n *yaml.Node, field string) Retry {
	r := Retry{Attempts: 1}
	m, ok := p.mapping(n, field, []string{"attempts", "backoff"})
	if !ok && m == nil {
		return r
	}
	if e, ok := m["attempts"]; ok {
		if a, ok := p.integer(e.val, join(field, "attempts")); ok {
			if a < 1 || a > 100 {
				p.failf(e.val.Line, join(field, "attempts"), "must be between 1 and 100, got %d", a)
			} else {
				r.Attempts = a
			}
		}
	} else {
		p.failf(n.Line, field, "missing `attempts:`")
	}
	if e, ok := m["backoff"]; ok {
		r.Backoff, _ = p.duration(e.val, join(field, "backoff"), true)
	}
	return r
}
