package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/mcp/transport"
)

// httpFixture is a Server with the test tools over HTTP, and a client
// that initialized a session at version.
type httpFixture struct {
	*httpClient
	f    *fixture    // blocked and release of the test tools
	runs *fakeEngine // the server's run engine
}

func setupHTTP(t *testing.T, version string) *httpFixture {
	t.Helper()
	runs := newFakeEngine(nil)
	srv := New(Params{Runs: runs, RunStore: runs, PollInterval: 20 * time.Millisecond})
	f := &fixture{t: t, blocked: make(chan struct{}, 10), release: make(chan struct{})}
	srv.mcp.AddTools(f.testTools()...)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ts := httptest.NewServer(srv.HTTPHandler(transport.HTTPOptions{Token: "tok"}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		select {
		case <-f.release:
		default:
			close(f.release)
		}
	})
	c := &httpClient{hc: newHTTPClient(t), t: t, url: ts.URL + transport.HTTPPath, token: "tok"}
	resp := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`, version))
	c.sid = resp.Header.Get("Mcp-Session-Id")
	if c.sid == "" || resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, c.sid)
	}
	if resp := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d", resp.StatusCode)
	}
	return &httpFixture{httpClient: c, f: f, runs: runs}
}

// send posts body with the session and token, headers overriding.
func (c *httpClient) send(body string, headers map[string]string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Mcp-Session-Id", c.sid)
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestHTTPSpecDetails checks the protocol-version header, Accept, the
// bearer scheme's case and the 401 challenge.
func TestHTTPSpecDetails(t *testing.T) {
	t.Parallel()
	h := setupHTTP(t, "2025-11-25")
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	progress := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_progress","arguments":{"n":3},"_meta":{"progressToken":"p"}}}`
	cases := []struct {
		name    string
		body    string
		headers map[string]string
		status  int
		ctype   string
	}{
		{"supported version header", list, map[string]string{"Mcp-Protocol-Version": "2025-11-25"}, 200, "application/json"},
		{"unsupported version header", list, map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, 400, "application/json"},
		{"unoffered 2026-07-28 header", list, map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, 400, "application/json"},
		{"JSON only, with progress", progress, map[string]string{"Accept": "application/json"}, 200, "application/json"},
		{"SSE only", list, map[string]string{"Accept": "text/event-stream"}, 200, "text/event-stream"},
		{"neither", list, map[string]string{"Accept": "text/html"}, 406, ""},
		{"lowercase bearer", list, map[string]string{"Authorization": "bearer tok"}, 200, "application/json"},
		{"no token", list, map[string]string{"Authorization": ""}, 401, ""},
		{"wrong token", list, map[string]string{"Authorization": "Bearer nope"}, 401, ""},
	}
	for _, c := range cases {
		resp := h.send(c.body, c.headers)
		if resp.StatusCode != c.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), c.ctype) {
			b, _ := io.ReadAll(resp.Body)
			t.Errorf("%s: %d %s %s, want %d %s", c.name, resp.StatusCode, resp.Header.Get("Content-Type"), b, c.status, c.ctype)
			continue
		}
		if c.status == 401 {
			meta := strings.TrimSuffix(h.url, transport.HTTPPath) + "/.well-known/oauth-protected-resource" + transport.HTTPPath
			if ch := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, "Bearer ") || !strings.Contains(ch, `resource_metadata="`+meta+`"`) {
				t.Errorf("%s: WWW-Authenticate %q, want a Bearer challenge with resource_metadata=%q", c.name, ch, meta)
			}
		}
		if c.name == "JSON only, with progress" {
			var m struct {
				ID     int             `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if b, _ := io.ReadAll(resp.Body); json.Unmarshal(b, &m) != nil || m.ID != 3 || m.Result == nil {
				t.Errorf("%s: body %s, want the response as JSON", c.name, b)
			}
		}
	}
}

// TestHTTPResourceMetadata fetches, without a token, the protected-resource
// metadata (RFC 9728) a 401 points at: it names the endpoint and bearer
// tokens in the Authorization header.
func TestHTTPResourceMetadata(t *testing.T) {
	t.Parallel()
	h := setupHTTP(t, "2025-11-25")
	base := strings.TrimSuffix(h.url, transport.HTTPPath)
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := h.hc.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var m struct {
			Resource string   `json:"resource"`
			Methods  []string `json:"bearer_methods_supported"`
		}
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || json.Unmarshal(b, &m) != nil ||
			m.Resource != h.url || len(m.Methods) != 1 || m.Methods[0] != "header" {
			t.Errorf("GET %s: %d %s, want the metadata of %s", path, resp.StatusCode, b, h.url)
		}
	}
	// Documents not served are not found, so that a client's OAuth
	// discovery moves on; the endpoint itself wants the token.
	for path, want := range map[string]int{"/.well-known/oauth-authorization-server": 404, "/.well-known/openid-configuration": 404, transport.HTTPPath: 401} {
		resp, err := h.hc.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s without a token: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// TestHTTPCancelledGetsNoAnswer cancels a long wait over HTTP: its POST
// ends without a response.
func TestHTTPCancelledGetsNoAnswer(t *testing.T) {
	t.Parallel()
	h := setupHTTP(t, "2025-11-25")
	done := make(chan []json.RawMessage, 1)
	go func() {
		resp := h.send(`{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"test_block","arguments":{}}}`, nil)
		done <- events(t, resp)
	}()
	<-h.f.blocked
	if resp := h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long"}}`, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel: %d", resp.StatusCode)
	}
	for _, ev := range <-done {
		if strings.Contains(string(ev), `"id":"long"`) {
			t.Errorf("the cancelled call was answered: %s", ev)
		}
	}
}

// TestHTTPBatches checks batches over HTTP: answered at 2025-03-26 only.
func TestHTTPBatches(t *testing.T) {
	t.Parallel()
	batch := `[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","id":"b","method":"tools/list"}]`
	old := setupHTTP(t, "2025-03-26")
	resp := old.send(batch, nil)
	b, _ := io.ReadAll(resp.Body)
	var answers []map[string]any
	if resp.StatusCode != 200 || json.Unmarshal(b, &answers) != nil || len(answers) != 2 {
		t.Errorf("batch at 2025-03-26: %d %s, want two answers", resp.StatusCode, b)
	}
	now := setupHTTP(t, "2025-11-25")
	resp = now.send(batch, nil)
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "2025-03-26") {
		t.Errorf("batch at 2025-11-25: %d %s, want 400 naming 2025-03-26", resp.StatusCode, b)
	}
}

// TestHTTPJSONRPCRules checks the JSON-RPC codes and id rules over HTTP,
// as TestJSONRPCRules does on stdio.
func TestHTTPJSONRPCRules(t *testing.T) {
	t.Parallel()
	h := setupHTTP(t, "2025-11-25")
	cases := []struct {
		name, body string
		code       int
		id         string
		text       string
	}{
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, -32600, "null", "id must be"},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, "null", "integer"},
		{"method not a string", `{"jsonrpc":"2.0","id":7,"method":5}`, -32600, "7", "method must be a string"},
		{"array params", `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":[1]}`, -32602, "8", "params must be"},
		{"subscribe to a foreign uri", `{"jsonrpc":"2.0","id":10,"method":"resources/subscribe","params":{"uri":"file:///etc/passwd"}}`, -32002, "10", "unknown resource"},
		{"subscribe to a missing run", `{"jsonrpc":"2.0","id":11,"method":"resources/subscribe","params":{"uri":"cairn://runs/run_missing"}}`, -32002, "11", "run_missing"},
	}
	for _, c := range cases {
		resp := h.send(c.body, nil)
		evs := events(t, resp)
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if len(evs) == 0 || json.Unmarshal(evs[len(evs)-1], &m) != nil || m.Error == nil || m.Error.Code != c.code || string(m.ID) != c.id || !strings.Contains(m.Error.Message, c.text) {
			t.Errorf("%s: %d %s, want code %d, id %s, text with %q", c.name, resp.StatusCode, evs, c.code, c.id, c.text)
		}
	}
}
