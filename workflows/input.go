package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"gopkg.in/yaml.v3"
)

// schemaURL names the input schema inside its compiler; nothing is ever
// fetched from it.
const schemaURL = "https://cairn.invalid/workflow/input.schema.json"

var printer = message.NewPrinter(language.English)

// noLoader refuses to load schemas: a workflow's schema may only refer to
// itself ($ref: "#/$defs/x"), never to files or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schemas may only refer to themselves (#/...), not load %q", shorten(url))
}

func (p *parser) input(w *Workflow, n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // `input:` left empty: any object
	}
	if n.Kind != yaml.MappingNode {
		p.failf(n.Line, "input", "expected a JSON Schema mapping like {type: object, properties: {...}}, got %s", kindName(n))
		return
	}
	v, ok := p.jsonValue(n, "input")
	if !ok {
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		p.fail(n.Line, "input", fmt.Errorf("encode schema: %w", err))
		return
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		p.fail(n.Line, "input", fmt.Errorf("encode schema: %w", err))
		return
	}
	obj := doc.(map[string]any)
	if t, ok := obj["type"]; ok && !allowsObject(t) {
		p.failf(n.Line, "input", "the input is always an object: `type` must be object")
		return
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		p.fail(n.Line, "input", err)
		return
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		p.schemaError(n, err)
		return
	}
	w.schemaJSON, w.schema = raw, sch
	if props, ok := obj["properties"].(map[string]any); ok {
		for k, pv := range props {
			ps, ok := pv.(map[string]any)
			if !ok {
				continue
			}
			if d, ok := ps["default"]; ok {
				if w.defaults == nil {
					w.defaults = map[string]any{}
				}
				w.defaults[k] = d
			}
		}
	}
}

func allowsObject(t any) bool {
	switch x := t.(type) {
	case string:
		return x == "object"
	case []any:
		return slices.Contains(x, any("object"))
	}
	return false
}

// schemaError reports a schema that does not compile, at the line of the
// offending part of the schema when the error says where.
func (p *parser) schemaError(n *yaml.Node, err error) {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		seen := map[string]bool{}
		for _, l := range leaves(ve) {
			// The metaschema's alternatives give several reasons for one
			// spot; the first is the telling one.
			loc := strings.Join(l.InstanceLocation, "/")
			if seen[loc] {
				continue
			}
			seen[loc] = true
			at := nodeAt(n, l.InstanceLocation)
			field := "input"
			if len(l.InstanceLocation) > 0 {
				field = "input: /" + strings.Join(l.InstanceLocation, "/")
			}
			p.failf(at.Line, field, "not a valid JSON Schema: %s", kindMessage(l.ErrorKind))
		}
		return
	}
	p.fail(n.Line, "input", fmt.Errorf("compile schema: %s", strings.ReplaceAll(err.Error(), "\n", "; ")))
}

// nodeAt follows a JSON pointer (as tokens) into a YAML node, stopping at
// the deepest node found.
func nodeAt(n *yaml.Node, tokens []string) *yaml.Node {
	for _, tok := range tokens {
		next := (*yaml.Node)(nil)
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == tok {
					next = n.Content[i+1]
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
			}
		}
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

// jsonValue converts a YAML node into a JSON-compatible value.
func (p *parser) jsonValue(n *yaml.Node, field string) (any, bool) {
	switch n.Kind {
	case yaml.MappingNode:
		pairs, ok := p.pairs(n, field, nil)
		m := make(map[string]any, len(pairs))
		for _, e := range pairs {
			val, good := p.jsonValue(e.val, field)
			ok = ok && good
			m[e.key.Value] = val
		}
		return m, ok
	case yaml.SequenceNode:
		list := make([]any, 0, len(n.Content))
		ok := true
		for _, c := range n.Content {
			val, good := p.jsonValue(c, field)
			ok = ok && good
			list = append(list, val)
		}
		return list, ok
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, true
		case "!!bool", "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err != nil {
				p.fail(n.Line, field, fmt.Errorf("bad value %q: %w", shorten(n.Value), err))
				return nil, false
			}
			if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
				p.failf(n.Line, field, "%s is not a JSON number", n.Value)
				return nil, false
			}
			return v, true
		}
		if strings.Contains(n.Value, "${{") {
			p.failf(n.Line, field, "does not take ${{ }} expressions (the input schema is read as written when the file loads; a default is used as written); write the value itself")
			return nil, false
		}
		return n.Value, true
	}
	p.failf(n.Line, field, "unsupported YAML node")
	return nil, false
}

// ValidateInput checks a launch input: it must be a JSON object (empty or
// null means {}); the defaults of the schema's top-level properties fill
// missing keys; then the schema validates it. It returns the input to
// store and to give expressions (numbers as int when integral, else
// float64). Running it again on its own result returns the same value.
// The error is an *InputError.
func (w *Workflow) ValidateInput(in json.RawMessage) (map[string]any, error) {
	obj := map[string]any{}
	if t := bytes.TrimSpace(in); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, &InputError{Problems: []string{"not valid JSON: " + err.Error()}}
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, &InputError{Problems: []string{"not valid JSON: extra data after the object"}}
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, &InputError{Problems: []string{"must be a JSON object, got " + typeName(v)}}
		}
		obj = m
	}
	for k, d := range w.defaults {
		if _, ok := obj[k]; !ok {
			obj[k] = clone(d)
		}
	}
	if w.schema != nil {
		if err := w.schema.Validate(obj); err != nil {
			var ve *jsonschema.ValidationError
			if !errors.As(err, &ve) {
				return nil, &InputError{Problems: []string{err.Error()}}
			}
			var problems []string
			for _, l := range leaves(ve) {
				msg := kindMessage(l.ErrorKind)
				if len(l.InstanceLocation) > 0 {
					msg = "/" + strings.Join(l.InstanceLocation, "/") + ": " + msg
				}
				if !slices.Contains(problems, msg) {
					problems = append(problems, msg)
				}
			}
			slices.Sort(problems) // the validator's order varies
			return nil, &InputError{Problems: problems}
		}
	}
	return normalizeJSON(obj).(map[string]any), nil
}

// leaves returns the innermost validation errors: the actual reasons.
func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func kindMessage(k jsonschema.ErrorKind) string {
	if t, ok := k.(*kind.Type); ok {
		return fmt.Sprintf("expected %s, got %s", strings.Join(t.Want, " or "), t.Got)
	}
	return k.LocalizedString(printer)
}

// clone deep-copies a JSON value, so a default is never shared between inputs.
func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = clone(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = clone(e)
		}
		return l
	}
	return v
}
