package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// askShipIt asks "Ship it?" through elicitation/create and describes the
// answer.
func askShipIt(ctx context.Context, srv *server.MCPServer) string {
	res, err := srv.RequestElicitation(ctx, mcpgo.ElicitationRequest{Params: mcpgo.ElicitationParams{
		Message: "Ship it?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string", "enum": []string{"yes", "no"}}}},
	}})
	if err != nil {
		return "error: " + err.Error()
	}
	content, _ := res.Content.(map[string]any)
	return fmt.Sprintf("%s %v", res.Action, content["answer"])
}

// sseEvents reads the JSON messages of an SSE stream.
type sseEvents struct {
	t  *testing.T
	sc *bufio.Scanner
}

func (e *sseEvents) next() map[string]json.RawMessage {
	e.t.Helper()
	for e.sc.Scan() {
		data, ok := strings.CutPrefix(e.sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			e.t.Fatalf("event %q: %v", data, err)
		}
		return m
	}
	e.t.Fatalf("the stream ended: %v", e.sc.Err())
	return nil
}

// TestElicitationOverHTTP: a tool's handler asks on its call's POST
// stream; a request made after its call answered goes on the session's
// GET stream, and is refused while none is open; the client's answer (a
// POST of a JSON-RPC response, 202) comes back to the asker by id.
func TestElicitationOverHTTP(t *testing.T) {
	t.Parallel()
	srv := server.NewMCPServer("t", "1", server.WithToolCapabilities(false))
	later := make(chan string, 1)
	srv.AddTool(mcpgo.NewTool("ask"), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText(askShipIt(ctx, srv)), nil
	})
	srv.AddTool(mcpgo.NewTool("ask_later"), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		bg := srv.WithContext(context.Background(), server.ClientSessionFromContext(ctx))
		go func() { later <- askShipIt(bg, srv) }()
		return mcpgo.NewToolResultText("asking"), nil
	})
	ts := httptest.NewServer(NewHandler(Config{MCP: srv}, HTTPOptions{Token: "tok"}))
	t.Cleanup(ts.Close)
	hc, url := newClient(t), ts.URL+HTTPPath

	resp, _ := post(t, hc, url, "tok", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	post(t, hc, url, "tok", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	stream := func(method, body string) (*http.Response, *sseEvents) {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if method == http.MethodGet {
			req.Header.Set("Accept", "text/event-stream")
		}
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp, &sseEvents{t: t, sc: bufio.NewScanner(resp.Body)}
	}
	answer := func(req map[string]json.RawMessage, result string) {
		t.Helper()
		if string(req["method"]) != `"elicitation/create"` || !strings.Contains(string(req["params"]), "Ship it?") {
			t.Fatalf("want an elicitation request, got %v", req)
		}
		if resp, body := post(t, hc, url, "tok", sid, `{"jsonrpc":"2.0","id":`+string(req["id"])+`,"result":`+result+`}`); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("the client's response: %d %s, want 202", resp.StatusCode, body)
		}
	}

	// On the call's own stream: the request, then the call's result.
	_, call := stream(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	answer(call.next(), `{"action":"accept","content":{"answer":"yes"}}`)
	if res := call.next(); string(res["id"]) != "2" || !strings.Contains(string(res["result"]), "accept yes") {
		t.Fatalf("tool result %v; want accept yes", res)
	}

	// After the call answered, with no GET stream: refused at once.
	if _, body := post(t, hc, url, "tok", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask_later","arguments":{}}}`); !strings.Contains(body, "asking") {
		t.Fatalf("ask_later: %s", body)
	}
	if got := <-later; !strings.Contains(got, "no GET stream") {
		t.Fatalf("without a GET stream: %q, want a refusal naming the GET stream", got)
	}

	// With the GET stream open, the request comes on it.
	get, events := stream(http.MethodGet, "")
	if get.StatusCode != http.StatusOK || !events.sc.Scan() || events.sc.Text() != ": stream open" {
		t.Fatalf("GET stream: %d %q", get.StatusCode, events.sc.Text())
	}
	post(t, hc, url, "tok", sid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask_later","arguments":{}}}`)
	answer(events.next(), `{"action":"accept","content":{"answer":"no"}}`)
	if got := <-later; got != "accept no" {
		t.Fatalf("on the GET stream: %q, want accept no", got)
	}
	// A response to no request of ours is dropped (202, nothing waits).
	if resp, _ := post(t, hc, url, "tok", sid, `{"jsonrpc":"2.0","id":"cairn-req-99","result":{}}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a stray response: %d, want 202", resp.StatusCode)
	}
}
