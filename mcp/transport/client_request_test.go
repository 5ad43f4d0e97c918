package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestElicitationOverStdio: a tool asks the client through
// elicitation/create; the client's answer (a response line the server
// routes by id) comes back to the tool, and an error answer is an error.
func TestElicitationOverStdio(t *testing.T) {
	t.Parallel()
	srv := server.NewMCPServer("t", "1", server.WithToolCapabilities(false))
	srv.AddTool(mcpgo.NewTool("ask"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		res, err := srv.RequestElicitation(ctx, mcpgo.ElicitationRequest{Params: mcpgo.ElicitationParams{
			Message: "Ship it?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string", "enum": []string{"yes", "no"}}}},
		}})
		if err != nil {
			return mcpgo.NewToolResultError(err.Error()), nil
		}
		content, _ := res.Content.(map[string]any)
		return mcpgo.NewToolResultText(fmt.Sprintf("%s %v", res.Action, content["answer"])), nil
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- ServeStdio(ctx, Config{MCP: srv}, inR, outW)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]json.RawMessage {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the server closed its output: %v", lines.Err())
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", lines.Text(), err)
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}}`)
	next()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	for _, tc := range []struct{ answer, want string }{
		{`"result":{"action":"accept","content":{"answer":"yes"}}`, "accept yes"},
		{`"error":{"code":-32601,"message":"no elicitation here"}`, "no elicitation here"},
	} {
		send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
		req := next()
		if string(req["method"]) != `"elicitation/create"` || !strings.Contains(string(req["params"]), "Ship it?") {
			t.Fatalf("want an elicitation request, got %v", req)
		}
		send(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,` + tc.answer + `}`)
		resp := next()
		if string(resp["id"]) != "2" || !strings.Contains(string(resp["result"]), tc.want) {
			t.Fatalf("tool result %s; want %q", resp["result"], tc.want)
		}
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
