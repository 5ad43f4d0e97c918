package transport

import (
	"bufio"
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// newTestServer is an mcp-go server with one tool, whoami, answering the
// name of the token its request used.
func newTestServer() *server.MCPServer {
	s := server.NewMCPServer("t", "1", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("whoami"), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		name, ok := TokenName(ctx)
		return mcpgo.NewToolResultText(fmt.Sprintf("%s %v", name, ok)), nil
	})
	return s
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func post(t *testing.T, hc *http.Client, url, token, sid, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func newClient(t *testing.T) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TestNamedTokens checks that each named token opens its own sessions,
// that a handler learns the token's name, and that a session opened with
// one token cannot be used with another.
func TestNamedTokens(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(NewHandler(Config{MCP: newTestServer()}, HTTPOptions{Tokens: map[string]string{"alice": "ta", "bob": "tb"}}))
	t.Cleanup(ts.Close)
	hc, url := newClient(t), ts.URL+HTTPPath
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	for name, tok := range map[string]string{"alice": "ta", "bob": "tb"} {
		resp, _ := post(t, hc, url, tok, "", initBody)
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != 200 || sid == "" {
			t.Fatalf("%s: initialize %d", name, resp.StatusCode)
		}
		if _, body := post(t, hc, url, tok, sid, call); !strings.Contains(body, name+" true") {
			t.Errorf("%s: whoami %s", name, body)
		}
		other := map[string]string{"ta": "tb", "tb": "ta"}[tok]
		if resp, _ := post(t, hc, url, other, sid, call); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s's session with another token: %d, want 404", name, resp.StatusCode)
		}
	}
	if resp, _ := post(t, hc, url, "", "", initBody); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", resp.StatusCode)
	}
}

// TestSessionFlood opens twice as many sessions as the table holds (a
// table of 100 here; mcp/e2e floods the real binary's 1,000 with 2,000):
// the oldest idle ones are evicted, so a new client still connects, and
// a session in use is kept.
func TestSessionFlood(t *testing.T) {
	t.Parallel()
	h := NewHandler(Config{MCP: newTestServer()}, HTTPOptions{Token: "tok"}).(*httpTransport)
	h.sessions.max = 100
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	hc, url := newClient(t), ts.URL+HTTPPath
	first, _ := post(t, hc, url, "tok", "", initBody)
	kept := first.Header.Get("Mcp-Session-Id")
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 200; i += 4 {
				// The first client keeps using its session.
				if resp, _ := post(t, hc, url, "tok", kept, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); resp.StatusCode != 200 {
					errs <- fmt.Sprintf("a session in use was evicted: %d", resp.StatusCode)
				}
				if resp, body := post(t, hc, url, "tok", "", initBody); resp.StatusCode != 200 {
					errs <- fmt.Sprintf("initialize %d: %d %s", i, resp.StatusCode, body)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	start := time.Now()
	resp, _ := post(t, hc, url, "tok", "", initBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("a new client after the flood: %d", resp.StatusCode)
	}
	if resp, body := post(t, hc, url, "tok", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != 200 || !strings.Contains(body, "whoami") {
		t.Fatalf("tools/list after the flood: %d %s", resp.StatusCode, body)
	}
	t.Logf("after 200 initialize requests (table of 100) a new client connected and listed tools in %v", time.Since(start))
}

// TestBodyLimits checks that bodies beyond the shared budget are refused
// while a small call still goes through (the read deadline:
// TestStalledBodyIsCutOff).
func TestBodyLimits(t *testing.T) {
	t.Parallel()
	var b bodyBudget
	if !b.take(bodyBudgetBytes) {
		t.Fatal("take the whole budget")
	}
	if b.take(1) {
		t.Fatal("took past the budget")
	}
	h := &httpTransport{srv: newEndpoint(Config{MCP: newTestServer()}), tokens: newTokens(HTTPOptions{}), sessions: sessionTable{sessions: map[string]*list.Element{}}}
	h.sessions.srv = h.srv
	h.bodies.used.Store(bodyBudgetBytes) // the budget is held by others
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	hc, url := newClient(t), ts.URL+HTTPPath
	if resp, body := post(t, hc, url, "", "", initBody); resp.StatusCode != 200 {
		t.Fatalf("a small body with the budget held: %d %s", resp.StatusCode, body)
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 1<<20) + `"}}`
	resp, body := post(t, hc, url, "", "", big)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "busy") {
		t.Errorf("a large body with the budget held: %d %s, want 503", resp.StatusCode, body)
	}
	var m struct{ Error struct{ Code int } }
	if json.Unmarshal([]byte(body), &m) != nil || m.Error.Code == 0 {
		t.Errorf("503 body %s is not a JSON-RPC error", body)
	}
}

// TestStalledBodyIsCutOff: a client that sends part of a large body and
// stalls gets 408 once the read deadline passes, its connection is closed
// and what its body held of the shared budget is given back.
func TestStalledBodyIsCutOff(t *testing.T) {
	t.Parallel()
	h := NewHandler(Config{MCP: newTestServer()}, HTTPOptions{Token: "tok"}).(*httpTransport)
	h.bodies.timeout = 300 * time.Millisecond
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	part := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 512<<10)
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json\r\nAuthorization: Bearer tok\r\nContent-Length: 4000000\r\n\r\n%s", HTTPPath, ts.Listener.Addr(), part)
	// The answer comes when the deadline passes; the test's own deadline
	// only turns a hang into a failure.
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to the stalled body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "did not arrive") {
		t.Fatalf("stalled body: %d %s, want 408", resp.StatusCode, b)
	}
	if !resp.Close {
		t.Errorf("the stalled body's connection is kept open (Connection: %q)", resp.Header.Get("Connection"))
	}
	if used := h.bodies.used.Load(); used != 0 {
		t.Errorf("%d bytes of the body budget still held after the stalled body was cut off", used)
	}
	hc := newClient(t)
	if resp, body := post(t, hc, ts.URL+HTTPPath, "tok", "", initBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("a client after the stalled one: %d %s", resp.StatusCode, body)
	}
}

// TestConnectionCap: the listener holds at most n connections; the next
// is accepted only once one of them closes.
func TestConnectionCap(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newLimitListener(inner, 2).(*limitListener)
	t.Cleanup(func() { l.Close() })
	for range 3 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	var held []net.Conn
	for range 2 {
		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	third := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			third <- c
		}
	}()
	if n := len(l.slots); n != 2 {
		t.Fatalf("%d slots taken by two connections, want 2", n)
	}
	select {
	case <-third:
		t.Fatal("a third connection was accepted while two are open")
	default:
	}
	held[0].Close()
	held[0].Close() // closing twice frees one slot only
	c := <-third
	defer c.Close()
	if n := len(l.slots); n != 2 {
		t.Fatalf("%d slots taken after one closed and the third was accepted, want 2", n)
	}
	held[1].Close()
}
