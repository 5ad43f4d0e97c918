package mcp

import (
	"encoding/json"
	"testing"
)

// TestOutputSchemasPortable checks what MCP Inspector's --strict checks
// of output schemas: no node has a list of types, and no property is {}
// (it would accept anything).
func TestOutputSchemasPortable(t *testing.T) {
	t.Parallel()
	s := New(Params{})
	for name, tool := range s.mcp.ListTools() {
		var v any
		if err := json.Unmarshal(tool.Tool.RawOutputSchema, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkPortable(t, name, "outputSchema", v)
	}
}

func checkPortable(t *testing.T, tool, path string, v any) {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Errorf("%s %s: %v is not a schema object", tool, path, v)
		return
	}
	if _, list := m["type"].([]any); list {
		t.Errorf("%s %s: type is a list %v", tool, path, m["type"])
	}
	_, typed := m["type"]
	branches, _ := m["anyOf"].([]any)
	if !typed && len(branches) == 0 {
		t.Errorf("%s %s: %v accepts anything", tool, path, m)
	}
	for i, b := range branches {
		checkPortable(t, tool, path+".anyOf["+string(rune('0'+i))+"]", b)
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for k, p := range props {
			checkPortable(t, tool, path+".properties."+k, p)
		}
	}
	if items, ok := m["items"]; ok {
		checkPortable(t, tool, path+".items", items)
	}
}
