package mcp

import (
	"testing"

	"github.com/cairnhq/cairn/runs"
)

// BenchmarkToolCallStdio measures a tools/call round trip through the
// stdio transport and mcp-go with a fake domain (the MCP layer's own cost),
// next to ping (the transport alone).
//
//	go test -run '^$' -bench ToolCallStdio ./mcp
func BenchmarkToolCallStdio(b *testing.B) {
	for _, c := range []struct {
		name   string
		method string
		params any
	}{
		{"ping", "ping", nil},
		{"get_run", "tools/call", nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := setup(b, fixtureOpts{})
			params := c.params
			if c.name == "get_run" {
				var run runs.Run
				f.ok("launch_run", map[string]any{"target": "noop"}, &run)
				params = map[string]any{"name": "get_run", "arguments": map[string]any{"run_id": run.ID}}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				m, err := f.client.Call(f.ctx(), c.method, params)
				if err != nil || m.Error != nil {
					b.Fatal(err, m.Raw)
				}
			}
		})
	}
}
