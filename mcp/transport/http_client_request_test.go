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
	"time"

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

// elicitSession is a session of a test server with two tools that ask
// "Ship it?": ask from its handler (on the call's POST stream), ask_later
// after its call answered (on the GET stream), whose outcome is later's.
type elicitSession struct {
	t     *testing.T
	hc    *http.Client
	url   string
	sid   string
	later chan string
}

func newElicitSession(t *testing.T, getWait time.Duration) *elicitSession {
	srv := server.NewMCPServer("t", "1", server.WithToolCapabilities(false))
	e := &elicitSession{t: t, hc: newClient(t), later: make(chan string, 1)}
	srv.AddTool(mcpgo.NewTool("ask"), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText(askShipIt(ctx, srv)), nil
	})
	srv.AddTool(mcpgo.NewTool("ask_later"), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		bg := srv.WithContext(context.Background(), server.ClientSessionFromContext(ctx))
		go func() { e.later <- askShipIt(bg, srv) }()
		return mcpgo.NewToolResultText("asking"), nil
	})
	h := NewHandler(Config{MCP: srv}, HTTPOptions{Token: "tok"}).(*httpTransport)
	h.sessions.getWait = getWait
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	e.url = ts.URL + HTTPPath
	resp, _ := post(t, e.hc, e.url, "tok", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	e.sid = resp.Header.Get("Mcp-Session-Id")
	e.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return e
}

func (e *elicitSession) post(body string) (*http.Response, string) {
	e.t.Helper()
	return post(e.t, e.hc, e.url, "tok", e.sid, body)
}

// stream sends a request whose answer is an SSE stream (a GET without body).
func (e *elicitSession) stream(method, body string) (*http.Response, *sseEvents) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Mcp-Session-Id", e.sid)
	resp, err := e.hc.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp, &sseEvents{t: e.t, sc: bufio.NewScanner(resp.Body)}
}

// answer checks req is our question and POSTs the client's result.
func (e *elicitSession) answer(req map[string]json.RawMessage, result string) {
	e.t.Helper()
	if string(req["method"]) != `"elicitation/create"` || !strings.Contains(string(req["params"]), "Ship it?") {
		e.t.Fatalf("want an elicitation request, got %v", req)
	}
	if resp, body := e.post(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"result":` + result + `}`); resp.StatusCode != http.StatusAccepted {
		e.t.Fatalf("the client's response: %d %s, want 202", resp.StatusCode, body)
	}
}

func (e *elicitSession) askLater() {
	e.t.Helper()
	if _, body := e.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask_later","arguments":{}}}`); !strings.Contains(body, "asking") {
		e.t.Fatalf("ask_later: %s", body)
	}
}

// TestElicitationOverHTTP: a tool's handler asks on its call's POST
// stream; a request made after its call answered goes on the session's
// GET stream, also when the client opens it after the request was made;
// the client's answer (a POST of a JSON-RPC response, 202) comes back to
// the asker by id.
func TestElicitationOverHTTP(t *testing.T) {
	t.Parallel()
	e := newElicitSession(t, 0)

	// On the call's own stream: the request, then the call's result.
	_, call := e.stream(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	e.answer(call.next(), `{"action":"accept","content":{"answer":"yes"}}`)
	if res := call.next(); string(res["id"]) != "2" || !strings.Contains(string(res["result"]), "accept yes") {
		t.Fatalf("tool result %v; want accept yes", res)
	}

	// Asked with no GET stream open yet: it waits for the client's.
	e.askLater()
	get, events := e.stream(http.MethodGet, "")
	if get.StatusCode != http.StatusOK || !events.sc.Scan() || events.sc.Text() != ": stream open" {
		t.Fatalf("GET stream: %d %q", get.StatusCode, events.sc.Text())
	}
	e.answer(events.next(), `{"action":"accept","content":{"answer":"no"}}`)
	if got := <-e.later; got != "accept no" {
		t.Fatalf("on the GET stream: %q, want accept no", got)
	}
	// An error answer is the asker's error.
	e.askLater()
	req := events.next()
	if resp, _ := e.post(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"error":{"code":-32601,"message":"no elicitation here"}}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("an error answer: %d, want 202", resp.StatusCode)
	}
	if got := <-e.later; !strings.Contains(got, "no elicitation here") {
		t.Fatalf("error answer: %q", got)
	}
	// A response to no request of ours is dropped (202, nothing waits).
	if resp, _ := e.post(`{"jsonrpc":"2.0","id":"cairn-req-99","result":{}}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a stray response: %d, want 202", resp.StatusCode)
	}
}

// TestElicitationWithoutGETStream: a request with no call to ride on and
// no GET stream opened within the session's wait is refused, naming the
// GET stream.
func TestElicitationWithoutGETStream(t *testing.T) {
	t.Parallel()
	e := newElicitSession(t, 50*time.Millisecond)
	e.askLater()
	if got := <-e.later; !strings.Contains(got, "no GET stream") {
		t.Fatalf("without a GET stream: %q, want a refusal naming the GET stream", got)
	}
}
