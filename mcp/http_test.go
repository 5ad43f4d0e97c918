package mcp

import (
	"bufio"
	"bytes"
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

	cairnruns "github.com/cairnhq/cairn/runs"

	"github.com/cairnhq/cairn/mcp/transport"
)

// newHTTPClient is a client whose idle connections close with the test.
func newHTTPClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func TestHTTPHandler(t *testing.T) {
	t.Parallel()
	hc := newHTTPClient(t)
	srv := New(Params{Runs: newFakeEngine(nil)})
	ts := httptest.NewServer(srv.HTTPHandler(transport.HTTPOptions{Token: "s3cret"}))
	t.Cleanup(ts.Close)
	url := ts.URL + transport.HTTPPath

	post := func(t *testing.T, body string, headers map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	auth := map[string]string{"Authorization": "Bearer s3cret"}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"http test","version":"1"}}}`

	cases := []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"foreign origin", map[string]string{"Authorization": "Bearer s3cret", "Origin": "https://evil.example"}, http.StatusForbidden},
		{"local origin", map[string]string{"Authorization": "Bearer s3cret", "Origin": "http://localhost:3000"}, http.StatusOK},
		{"no origin", auth, http.StatusOK},
	}
	for _, c := range cases {
		if resp := post(t, init, c.headers); resp.StatusCode != c.want {
			b, _ := io.ReadAll(resp.Body)
			t.Errorf("%s: status %d, want %d: %s", c.name, resp.StatusCode, c.want, b)
		}
	}

	resp := post(t, init, auth)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no session id")
	}
	h := map[string]string{"Authorization": "Bearer s3cret", "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	resp = post(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"launch_run","arguments":{"target":"noop"}}}`, h)
	body := readHTTPResult(t, resp)
	if !bytes.Contains(body, []byte(`"status":"succeeded"`)) {
		t.Errorf("launch_run over HTTP: %s", body)
	}
	resp = post(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_automations","arguments":{}}}`, h)
	if body := readHTTPResult(t, resp); !bytes.Contains(body, []byte("not available")) {
		t.Errorf("a missing service over HTTP: %s", body)
	}
	big := `{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":"` + strings.Repeat("a", transport.MaxMessageBytes) + `"}}`
	if resp := post(t, big, h); resp.StatusCode == http.StatusOK {
		if body := readHTTPResult(t, resp); !bytes.Contains(body, []byte("error")) {
			t.Errorf("an oversized body was served: %.200s", body)
		}
	}
}

// readHTTPResult returns the JSON-RPC response in a plain or SSE answer.
func readHTTPResult(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	var last []byte
	for sc.Scan() {
		if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(data, &m) == nil && len(m.ID) > 0 {
				return append([]byte(nil), data...)
			}
			last = append([]byte(nil), data...)
		}
	}
	return last
}

func TestServeHTTPStops(t *testing.T) {
	t.Parallel()
	srv := New(Params{})
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeHTTP(ctx, transport.ListenParams{Addr: "127.0.0.1:0", HTTPOptions: transport.HTTPOptions{NoAuth: true}, Ready: func(a net.Addr) { ready <- a.String() }})
	}()
	addr := <-ready
	resp, err := newHTTPClient(t).Get("http://" + addr + "/elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /elsewhere: %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeHTTP after cancel: %v", err)
	}
}

// httpClient is a minimal streamable HTTP client for the tests.
type httpClient struct {
	hc    *http.Client
	t     *testing.T
	url   string
	token string
	sid   string
}

func (c *httpClient) post(body string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// events reads an answer as a list of JSON-RPC messages in order.
func events(t *testing.T, resp *http.Response) []json.RawMessage {
	t.Helper()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return []json.RawMessage{bytes.TrimSpace(b)}
	}
	var out []json.RawMessage
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
			out = append(out, append(json.RawMessage(nil), data...))
		}
	}
	return out
}

// TestHTTPProgressAndStreams checks over HTTP that a call's progress comes
// on its own response stream before its response, that the GET stream
// carries resource updates, and that DELETE ends the session.
func TestHTTPProgressAndStreams(t *testing.T) {
	t.Parallel()
	runs := newFakeEngine(nil)
	srv := New(Params{Runs: runs, RunStore: runs, PollInterval: 20 * time.Millisecond})
	srv.mcp.AddTools((&fixture{blocked: make(chan struct{}, 10), release: make(chan struct{})}).testTools()...)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ts := httptest.NewServer(srv.HTTPHandler(transport.HTTPOptions{Token: "tok"}))
	t.Cleanup(ts.Close)
	c := &httpClient{hc: newHTTPClient(t), t: t, url: ts.URL + transport.HTTPPath, token: "tok"}
	resp := c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`)
	c.sid = resp.Header.Get("Mcp-Session-Id")
	if c.sid == "" || resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, c.sid)
	}
	if resp := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d", resp.StatusCode)
	}

	// Concurrent calls with progress: each stream holds its own
	// notifications, then its response, last.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"test_progress","arguments":{"n":50},"_meta":{"progressToken":"p%d"}}}`, 10+i, i))
			evs := events(t, resp)
			if len(evs) != 51 {
				t.Errorf("call %d: %d events, want 50 progress and the response", i, len(evs))
				return
			}
			for j, ev := range evs[:50] {
				if !bytes.Contains(ev, []byte(fmt.Sprintf(`"progressToken":"p%d"`, i))) {
					t.Errorf("call %d: event %d is not its progress: %s", i, j, ev)
				}
			}
			if !bytes.Contains(evs[50], []byte(fmt.Sprintf(`"id":%d`, 10+i))) {
				t.Errorf("call %d: last event is not the response: %s", i, evs[50])
			}
		}()
	}
	wg.Wait()

	// The GET stream gets resource updates.
	run, err := runs.Launch(ctx, cairnruns.LaunchParams{Target: "steps"})
	if err != nil {
		t.Fatal(err)
	}
	if evs := events(t, c.post(`{"jsonrpc":"2.0","id":20,"method":"resources/subscribe","params":{"uri":"cairn://runs/`+run.ID+`"}}`)); len(evs) != 1 || bytes.Contains(evs[0], []byte("error")) {
		t.Fatalf("subscribe: %s", evs)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Mcp-Session-Id", c.sid)
	get, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer get.Body.Close()
	if get.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", get.StatusCode)
	}
	runs.emit(run.ID, "news")
	sc := bufio.NewScanner(get.Body)
	found := false
	for !found && sc.Scan() {
		found = bytes.Contains(sc.Bytes(), []byte("notifications/resources/updated"))
	}
	if !found {
		t.Fatalf("no resource update on the GET stream: %v", sc.Err())
	}

	// DELETE ends the session.
	del, _ := http.NewRequest(http.MethodDelete, c.url, nil)
	del.Header.Set("Authorization", "Bearer tok")
	del.Header.Set("Mcp-Session-Id", c.sid)
	resp, err = c.hc.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	if resp := c.post(`{"jsonrpc":"2.0","id":30,"method":"ping"}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a call after DELETE: %d, want 404", resp.StatusCode)
	}

	// A foreign Host on a loopback listener (DNS rebinding) is refused.
	rb, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(`{}`))
	rb.Host = "evil.example"
	rb.Header.Set("Authorization", "Bearer tok")
	resp, err = c.hc.Do(rb)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: %d, want 403", resp.StatusCode)
	}
}
