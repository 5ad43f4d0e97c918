package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHTTPHandler(t *testing.T) {
	t.Parallel()
	srv := New(Params{Runs: newFakeRuns(), Sessions: newFakeSessions()})
	ts := httptest.NewServer(srv.HTTPHandler(HTTPOptions{Token: "s3cret"}))
	t.Cleanup(ts.Close)
	url := ts.URL + HTTPPath

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
		resp, err := http.DefaultClient.Do(req)
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
	big := `{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":"` + strings.Repeat("a", MaxMessageBytes) + `"}}`
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

func TestResolveListenAddr(t *testing.T) {
	t.Parallel()
	cases := []struct {
		p    ListenParams
		want string
		err  bool
	}{
		{ListenParams{Addr: ":8765"}, "127.0.0.1:8765", false},
		{ListenParams{Addr: "127.0.0.1:0"}, "127.0.0.1:0", false},
		{ListenParams{Addr: "localhost:80"}, "localhost:80", false},
		{ListenParams{Addr: "[::1]:80"}, "[::1]:80", false},
		{ListenParams{Addr: "0.0.0.0:80"}, "", true},
		{ListenParams{Addr: "0.0.0.0:80", AllowRemote: true}, "", true},
		{ListenParams{Addr: "0.0.0.0:80", AllowRemote: true, HTTPOptions: HTTPOptions{Token: "t"}}, "0.0.0.0:80", false},
		{ListenParams{Addr: "8765"}, "", true},
	}
	for _, c := range cases {
		got, err := ResolveListenAddr(c.p)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ResolveListenAddr(%+v) = %q, %v", c.p, got, err)
		}
		if c.p.Addr == "0.0.0.0:80" && !c.p.AllowRemote && !errors.Is(err, ErrRemoteAddr) {
			t.Errorf("remote address error %v should wrap ErrRemoteAddr", err)
		}
	}
}

func TestServeHTTPStops(t *testing.T) {
	t.Parallel()
	srv := New(Params{})
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeHTTP(ctx, ListenParams{Addr: "127.0.0.1:0", Ready: func(a net.Addr) { ready <- a.String() }})
	}()
	addr := <-ready
	resp, err := http.Get("http://" + addr + "/elsewhere")
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
