package workflows

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const schemaWorkflow = `
input:
  type: object
  properties:
    who: {type: string, default: world}
    count: {type: integer, minimum: 1, default: 2}
    ratio: {type: number}
    tags: {type: array, items: {type: string}, default: [a, b]}
    email: {type: string, format: email}
    mode: {enum: [fast, slow]}
    opts: {$ref: "#/$defs/opts"}
  required: [mode]
  additionalProperties: false
  $defs:
    opts:
      type: object
      properties: {verbose: {type: boolean}}
steps:
  - id: x
    exec: [echo, "${{ input.who }}"]
`

func TestValidateInput(t *testing.T) {
	t.Parallel()
	w := mustParse(t, schemaWorkflow)
	tests := []struct {
		name    string
		in      string
		want    map[string]any
		wantErr []string
	}{
		{"defaults", `{"mode": "fast"}`, map[string]any{"mode": "fast", "who": "world", "count": 2, "tags": []any{"a", "b"}}, nil},
		{"given values win", `{"mode": "slow", "who": "you", "count": 5, "ratio": 0.25, "tags": []}`, map[string]any{"mode": "slow", "who": "you", "count": 5, "ratio": 0.25, "tags": []any{}}, nil},
		{"big integer stays exact", `{"mode": "fast", "count": 9007199254740993}`, map[string]any{"mode": "fast", "who": "world", "count": 9007199254740993, "tags": []any{"a", "b"}}, nil},
		{"ref", `{"mode": "fast", "opts": {"verbose": true}}`, map[string]any{"mode": "fast", "who": "world", "count": 2, "tags": []any{"a", "b"}, "opts": map[string]any{"verbose": true}}, nil},
		{"wrong type", `{"mode": "fast", "who": 5}`, nil, []string{"input: /who: expected string, got number"}},
		{"missing required", `{}`, nil, []string{`input: missing property 'mode'`}},
		{"empty means {}", ``, nil, []string{`input: missing property 'mode'`}},
		{"null means {}", `null`, nil, []string{`input: missing property 'mode'`}},
		{"several problems", `{"mode": "medium", "count": 0, "extra": 1}`, nil, []string{"/mode: value must be one of", "/count: minimum: got 0, want 1", "additional properties 'extra' not allowed"}},
		{"integer", `{"mode": "fast", "count": 1.5}`, nil, []string{"/count: expected integer, got number"}},
		{"nested", `{"mode": "fast", "opts": {"verbose": "yes"}}`, nil, []string{"/opts/verbose: expected boolean, got string"}},
		{"array item", `{"mode": "fast", "tags": ["a", 1]}`, nil, []string{"/tags/1: expected string, got number"}},
		{"format asserted", `{"mode": "fast", "email": "not-an-email"}`, nil, []string{"/email:", "is not valid email"}},
		{"not an object", `["mode"]`, nil, []string{"input: must be a JSON object, got array"}},
		{"string", `"x"`, nil, []string{"input: must be a JSON object, got string"}},
		{"bad JSON", `{"mode": `, nil, []string{"input: not valid JSON"}},
		{"trailing data", `{"mode": "fast"} {}`, nil, []string{"input: not valid JSON: extra data"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := w.ValidateInput(json.RawMessage(tt.in))
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("accepted: %v", got)
				}
				var ie *InputError
				if !errors.As(err, &ie) {
					t.Errorf("not an *InputError: %T", err)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ValidateInput: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

// TestValidateInputIdempotent: the engine stores the validated input and
// validates the stored JSON again on resume; it must come back the same.
func TestValidateInputIdempotent(t *testing.T) {
	t.Parallel()
	w := mustParse(t, schemaWorkflow)
	first, err := w.ValidateInput(json.RawMessage(`{"mode": "fast", "ratio": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := json.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	second, err := w.ValidateInput(stored)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, second) {
		t.Errorf("first %#v\nsecond %#v", first, second)
	}
}

// TestDefaultsAreCopied: changing one run's input never changes the
// schema's default seen by the next run.
func TestDefaultsAreCopied(t *testing.T) {
	t.Parallel()
	w := mustParse(t, schemaWorkflow)
	a, err := w.ValidateInput(json.RawMessage(`{"mode": "fast"}`))
	if err != nil {
		t.Fatal(err)
	}
	a["tags"].([]any)[0] = "changed"
	b, err := w.ValidateInput(json.RawMessage(`{"mode": "fast"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := b["tags"].([]any)[0]; got != "a" {
		t.Errorf("default changed to %v", got)
	}
}

func TestValidateInputNoSchema(t *testing.T) {
	t.Parallel()
	w := mustParse(t, "steps:\n  - id: x\n    exec: [a]\n")
	got, err := w.ValidateInput(json.RawMessage(`{"anything": [1, {"x": 2.5}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"anything": []any{1, map[string]any{"x": 2.5}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v", got)
	}
	if got, err := w.ValidateInput(nil); err != nil || len(got) != 0 {
		t.Errorf("nil input: %v, %v", got, err)
	}
	if _, err := w.ValidateInput(json.RawMessage(`[1]`)); err == nil || err.Error() != "input: must be a JSON object, got array" {
		t.Errorf("array input: %v", err)
	}
	if got := string(w.InputSchema()); got != `{"type":"object"}` {
		t.Errorf("InputSchema = %s", got)
	}
}

func TestInputSchemaJSON(t *testing.T) {
	t.Parallel()
	w := mustParse(t, schemaWorkflow)
	var schema map[string]any
	if err := json.Unmarshal(w.InputSchema(), &schema); err != nil {
		t.Fatalf("InputSchema is not JSON: %v", err)
	}
	props := schema["properties"].(map[string]any)
	if got := props["who"].(map[string]any)["default"]; got != "world" {
		t.Errorf("who default = %v", got)
	}
	if got := props["count"].(map[string]any)["minimum"]; got != 1.0 {
		t.Errorf("count minimum = %v", got)
	}
	if _, ok := schema["$defs"]; !ok {
		t.Error("$defs missing")
	}
}

// TestEmptyInputKey: `input:` with nothing after it means no schema.
func TestEmptyInputKey(t *testing.T) {
	t.Parallel()
	w := mustParse(t, "input:\nsteps:\n  - id: x\n    exec: [a]\n")
	if _, err := w.ValidateInput(json.RawMessage(`{"a": 1}`)); err != nil {
		t.Error(err)
	}
}
