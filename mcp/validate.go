package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strings"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// argChecker validates tool arguments against each tool's input schema
// before its handler runs, and words a failure for the agent: it names
// the argument and says what is expected ("argument \"key\" is
// required", "unknown argument \"bogus\""). Schemas are compiled on first
// use and kept by tool name.
type argChecker struct {
	mcp *server.MCPServer

	mu       sync.Mutex
	compiled map[string]*checkedSchema
}

type checkedSchema struct {
	raw    []byte
	schema *jsonschema.Schema
	doc    any // the schema as a JSON value, to find a property's node
}

// middleware refuses a call whose arguments break the tool's schema with
// an isError result.
func (a *argChecker) middleware(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		if msg := a.check(req); msg != "" {
			return errorResult(msg), nil
		}
		return next(ctx, req)
	}
}

// check returns what is wrong with a call's arguments, or "".
func (a *argChecker) check(req mcpgo.CallToolRequest) string {
	cs := a.schemaOf(req.Params.Name)
	if cs == nil {
		return ""
	}
	raw := req.Params.RawArguments
	if len(bytes.TrimSpace(raw)) == 0 {
		b, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return "invalid arguments: " + err.Error()
		}
		raw = b
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		raw = []byte("{}")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return "invalid arguments: they are not valid JSON: " + err.Error()
	}
	if _, ok := v.(map[string]any); !ok {
		return "invalid arguments: they must be a JSON object of named arguments"
	}
	err = cs.schema.Validate(v)
	if err == nil {
		return ""
	}
	verr, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return "invalid arguments: " + err.Error()
	}
	var msgs []string
	seen := map[string]bool{}
	for _, leaf := range leaves(verr) {
		m := argMessage(cs.doc, leaf)
		if !seen[m] {
			seen[m] = true
			msgs = append(msgs, m)
		}
	}
	if len(msgs) > 3 {
		msgs = append(msgs[:3], fmt.Sprintf("and %d more", len(msgs)-3))
	}
	return "invalid arguments: " + strings.Join(msgs, "; ")
}

func (a *argChecker) schemaOf(name string) *checkedSchema {
	tool := a.mcp.GetTool(name)
	if tool == nil || len(tool.Tool.RawInputSchema) == 0 {
		return nil
	}
	raw := tool.Tool.RawInputSchema
	a.mu.Lock()
	defer a.mu.Unlock()
	if cs := a.compiled[name]; cs != nil && bytes.Equal(cs.raw, raw) {
		return cs
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil // our schemas are literals: tests catch a broken one
	}
	c := jsonschema.NewCompiler()
	url := "mem:///tools/" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil
	}
	if a.compiled == nil {
		a.compiled = map[string]*checkedSchema{}
	}
	cs := &checkedSchema{raw: raw, schema: s, doc: doc}
	a.compiled[name] = cs
	return cs
}

// leaves are the innermost failures of a validation error.
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// argPath names the value at loc: `"every"`, `"messages[0].role"`.
func argPath(loc []string) string {
	var b strings.Builder
	for i, seg := range loc {
		switch {
		case isIndex(seg):
			b.WriteString("[" + seg + "]")
		case i > 0:
			b.WriteString("." + seg)
		default:
			b.WriteString(seg)
		}
	}
	return fmt.Sprintf("%q", b.String())
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// node finds the schema node that describes the value at loc.
func node(doc any, loc []string) map[string]any {
	cur, _ := doc.(map[string]any)
	for _, seg := range loc {
		if cur == nil {
			return nil
		}
		if props, ok := cur["properties"].(map[string]any); ok {
			if p, ok := props[seg].(map[string]any); ok {
				cur = p
				continue
			}
		}
		if items, ok := cur["items"].(map[string]any); ok && isIndex(seg) {
			cur = items
			continue
		}
		return nil
	}
	return cur
}

var quotedSample = regexp.MustCompile(`"([^"]{1,40})"`)

// example is a sample value for a string node: its first example, or the
// first quoted value in its description (`Interval ("30m", "1h")`).
func example(n map[string]any) string {
	if ex, ok := n["examples"].([]any); ok && len(ex) > 0 {
		return fmt.Sprintf(" such as %v", quoteAny(ex[0]))
	}
	if d, ok := n["description"].(string); ok {
		if m := quotedSample.FindStringSubmatch(d); m != nil {
			return fmt.Sprintf(" such as %q", m[1])
		}
	}
	return ""
}

func quoteAny(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func article(t string) string {
	if t == "" {
		return ""
	}
	switch t[0] {
	case 'a', 'e', 'i', 'o', 'u':
		return "an " + t
	}
	return "a " + t
}

func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return fmt.Sprint(f)
}

var printer = message.NewPrinter(language.English)

// argMessage words one failure.
func argMessage(doc any, e *jsonschema.ValidationError) string {
	loc := e.InstanceLocation
	at := argPath(loc)
	n := node(doc, loc)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		names := make([]string, len(k.Missing))
		for i, m := range k.Missing {
			names[i] = argPath(append(append([]string(nil), loc...), m))
		}
		if len(loc) == 0 {
			if len(names) == 1 {
				return "argument " + names[0] + " is required"
			}
			return "arguments " + strings.Join(names, ", ") + " are required"
		}
		return at + " needs " + strings.Join(names, ", ")
	case *kind.AdditionalProperties:
		quoted := make([]string, len(k.Properties))
		for i, p := range k.Properties {
			quoted[i] = fmt.Sprintf("%q", p)
		}
		known := ""
		if props, ok := n["properties"].(map[string]any); ok && len(props) > 0 {
			known = " (known: " + strings.Join(sortedKeys(props), ", ") + ")"
		}
		if len(loc) == 0 {
			return "unknown argument " + strings.Join(quoted, ", ") + known
		}
		return at + " has unknown field " + strings.Join(quoted, ", ") + known
	case *kind.Type:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = article(w)
		}
		ex := ""
		if len(k.Want) == 1 && k.Want[0] == "string" && n != nil {
			ex = example(n)
		}
		return fmt.Sprintf("%s must be %s%s, got %s", at, strings.Join(want, " or "), ex, article(k.Got))
	case *kind.MaxLength:
		return fmt.Sprintf("%s is %d characters long; at most %d are allowed", at, k.Got, k.Want)
	case *kind.MinLength:
		if k.Want == 1 {
			return at + " must not be empty"
		}
		return fmt.Sprintf("%s is %d characters long; at least %d are needed", at, k.Got, k.Want)
	case *kind.Maximum:
		return fmt.Sprintf("%s must be at most %s, got %s", at, ratString(k.Want), ratString(k.Got))
	case *kind.Minimum:
		return fmt.Sprintf("%s must be at least %s, got %s", at, ratString(k.Want), ratString(k.Got))
	case *kind.Enum:
		opts := make([]string, len(k.Want))
		for i, w := range k.Want {
			opts[i] = quoteAny(w)
		}
		return fmt.Sprintf("%s must be one of %s, got %s", at, strings.Join(opts, ", "), quoteAny(k.Got))
	case *kind.MaxItems:
		return fmt.Sprintf("%s has %d items; at most %d are allowed", at, k.Got, k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("%s has %d items; at least %d are needed", at, k.Got, k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("%s has %d fields; at most %d are allowed", at, k.Got, k.Want)
	}
	if len(loc) == 0 {
		return e.ErrorKind.LocalizedString(printer)
	}
	return at + ": " + e.ErrorKind.LocalizedString(printer)
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
