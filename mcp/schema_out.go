package mcp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cairnhq/cairn/store"
)

// Output schemas are generated from the Go types the tools answer with, so
// that what a tool says it returns is what it returns. Output schemas
// describe; they do not bound.

// anyJSON is the description of a free JSON value whose field says no more.
const anyJSON = "Any JSON value."

// wireSchemas are the schemas of the types whose JSON is not what their Go
// kind says.
var wireSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {
		Types:       []string{"object", "array", "string", "number", "boolean", "null"},
		Description: anyJSON,
	},
	reflect.TypeFor[time.Time](): {Type: "string", Format: "date-time"},
	reflect.TypeFor[store.RunStatus](): {
		Type: "string", Description: "The run's status.",
		Enum: []any{"queued", "running", "waiting", "succeeded", "failed", "cancelled"},
	},
}

// fieldDocs describe the free JSON fields of domain types by name (the
// domain packages carry no schema tags).
var fieldDocs = map[string]string{
	"input":    "The input object, as validated against the target's input schema.",
	"result":   "The workflow's result (its result: expression): any JSON value.",
	"parts":    `The message's parts: an array of objects, each with a "type" ("text", "tool_call" or "tool_result").`,
	"metadata": "The message's free metadata: a JSON object.",
}

// outputSchema is the JSON Schema of T, a struct type, as a tool's output
// schema.
func outputSchema[T any]() json.RawMessage {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: wireSchemas})
	if err != nil {
		panic(fmt.Sprintf("generate output schema: %v", err)) // a programming error
	}
	if s.Type != "object" {
		panic(fmt.Sprintf("output schema of %s: type %q, want a struct", reflect.TypeFor[T](), s.Type))
	}
	describeFields(s)
	singleTypes(s)
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("encode output schema: %v", err))
	}
	return b
}

// describeFields gives the free JSON properties their fieldDocs text.
func describeFields(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for name, p := range s.Properties {
		if doc, ok := fieldDocs[name]; ok && p.Description == anyJSON {
			p.Description = doc
		}
		describeFields(p)
	}
	describeFields(s.Items)
}

// singleTypes rewrites every node whose type is a list (["null",
// "object"], a nullable field; the six JSON types, a free value) as anyOf
// branches of one type each: a client that maps tool schemas onto a
// single-type dialect (Gemini's function declarations, say) rejects or
// drops a type list, and MCP Inspector's --strict warns about it. The
// node's description stays on the node; its other keywords go to the
// branch of their type.
func singleTypes(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for _, p := range s.Properties {
		singleTypes(p)
	}
	singleTypes(s.Items)
	singleTypes(s.AdditionalProperties)
	if len(s.Types) < 2 {
		return
	}
	nonNull := 0
	for _, t := range s.Types {
		if t != "null" {
			nonNull++
		}
	}
	branches := make([]*jsonschema.Schema, 0, len(s.Types))
	for _, t := range s.Types {
		if t == "null" || nonNull > 1 {
			branches = append(branches, &jsonschema.Schema{Type: t})
			continue
		}
		b := *s
		b.Types, b.Type, b.Description = nil, t, ""
		branches = append(branches, &b)
	}
	*s = jsonschema.Schema{Description: s.Description, AnyOf: branches}
}
