package workflows

// The typed readers of YAML nodes: each checks a node's kind and value,
// reports (fail) what does not fit at the node's line, and returns ok
// false then.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!bool":
			return "a boolean"
		case "!!int", "!!float":
			return "a number"
		}
		return "a string"
	}
	return "something else"
}

// mapping checks that n is a mapping whose keys are all in allowed, each
// once, and returns its entries by key.
func (p *parser) mapping(n *yaml.Node, field string, allowed []string) (map[string]entry, bool) {
	if n.Kind != yaml.MappingNode {
		p.failf(n.Line, field, "expected a mapping, got %s", kindName(n))
		return nil, false
	}
	pairs, ok := p.pairs(n, field, allowed)
	m := make(map[string]entry, len(pairs))
	for _, e := range pairs {
		m[e.key.Value] = e
	}
	return m, ok
}

// pairs returns the entries of the mapping n in order. Their keys are
// plain strings, each once and, unless allowed is nil, one of allowed; it
// reports every other key, and ok is false when there was one.
func (p *parser) pairs(n *yaml.Node, field string, allowed []string) (pairs []entry, ok bool) {
	pairs = make([]entry, 0, len(n.Content)/2)
	first := map[string]int{}
	ok = true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.failf(k.Line, field, "keys must be plain strings, got %s", kindName(k))
			ok = false
			continue
		}
		if allowed != nil && !slices.Contains(allowed, k.Value) {
			msg := fmt.Sprintf("unknown key %q", shorten(k.Value))
			if s := suggest(k.Value, allowed); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			} else {
				msg += fmt.Sprintf(" (known keys: %s)", strings.Join(allowed, ", "))
			}
			p.fail(k.Line, field, errors.New(msg))
			ok = false
			continue
		}
		if line, dup := first[k.Value]; dup {
			p.failf(k.Line, field, "duplicate key %q (first at line %d)", shorten(k.Value), line)
			ok = false
			continue
		}
		first[k.Value] = k.Line
		pairs = append(pairs, entry{k, v})
	}
	return pairs, ok
}

// suggest returns the allowed key closest to s when it is a likely typo.
func suggest(s string, allowed []string) string {
	s = strings.ToLower(s)
	best, bestP := "", 3
	for _, a := range allowed {
		p := 0
		for p < len(a) && p < len(s) && a[p] == s[p] {
			p++
		}
		if p > bestP {
			best, bestP = a, p
		}
	}
	if best != "" {
		return best
	}
	bestD := 3
	for _, a := range allowed {
		if d := editDistance(s, a); d < bestD {
			best, bestD = a, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// andList joins names as "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func join(field, sub string) string {
	if field == "" {
		return sub
	}
	return field + ": " + sub
}

// str returns the text of a scalar that is read as it is: null,
// collections and `${{ }}` (which only templates interpolate) are errors.
func (p *parser) str(n *yaml.Node, field string) (string, bool) {
	s, ok := p.raw(n, field)
	if ok && strings.Contains(s, "${{") {
		p.failf(n.Line, field, "does not take ${{ }} expressions (it is read as written when the file loads); write the value itself")
		return "", false
	}
	return s, ok
}

// raw returns a scalar's text, expressions included; null and
// collections are errors.
func (p *parser) raw(n *yaml.Node, field string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.failf(n.Line, field, "expected a string, got %s", kindName(n))
		return "", false
	}
	return n.Value, true
}

func (p *parser) nonEmpty(n *yaml.Node, field string) (string, bool) {
	s, ok := p.str(n, field)
	return p.filled(n, field, s, ok)
}

// nonEmptyRaw is nonEmpty for a field that takes expressions.
func (p *parser) nonEmptyRaw(n *yaml.Node, field string) (string, bool) {
	s, ok := p.raw(n, field)
	return p.filled(n, field, s, ok)
}

func (p *parser) filled(n *yaml.Node, field, s string, ok bool) (string, bool) {
	if ok && strings.TrimSpace(s) == "" {
		p.failf(n.Line, field, "must not be empty")
		return "", false
	}
	return s, ok
}

func (p *parser) boolean(n *yaml.Node, field string) (bool, bool) {
	b, ok := boolValue(n)
	if !ok {
		p.failf(n.Line, field, "expected true or false, got %s", kindName(n))
	}
	return b, ok
}

// boolValue reads a YAML boolean (true, false, True, FALSE...).
func boolValue(n *yaml.Node) (bool, bool) {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
		return false, false
	}
	return b, true
}

func (p *parser) integer(n *yaml.Node, field string) (int, bool) {
	var i int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&i) != nil {
		p.failf(n.Line, field, "expected a whole number, got %s", kindName(n))
		return 0, false
	}
	return i, true
}

// duration parses "30s", "5m", "1h30m". Zero is allowed only when
// allowZero; negative never.
func (p *parser) duration(n *yaml.Node, field string, allowZero bool) (time.Duration, bool) {
	s, ok := p.str(n, field)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil && n.Tag == "!!int":
		p.failf(n.Line, field, "bad duration %q: missing unit (write e.g. \"%ss\")", shorten(s), shorten(s))
	case err != nil:
		p.failf(n.Line, field, "bad duration %q: use a number and a unit, e.g. 30s, 5m, 1h30m", shorten(s))
	case d < 0 || d == 0 && !allowZero:
		p.failf(n.Line, field, "bad duration %q: must be greater than 0", shorten(s))
	default:
		return d, true
	}
	return 0, false
}

func (p *parser) strList(n *yaml.Node, field string) ([]string, bool) {
	if n.Kind != yaml.SequenceNode {
		p.failf(n.Line, field, "expected a list, got %s", kindName(n))
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	ok := true
	for i, c := range n.Content {
		s, good := p.str(c, fmt.Sprintf("%s[%d]", field, i))
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}
