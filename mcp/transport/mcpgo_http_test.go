package transport

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

// TestMCPGoStreamableHTTPGaps shows why Cairn keeps its own streamable
// HTTP transport (see doc.go): mcp-go's StreamableHTTPServer, as pinned,
// serves a request from a foreign web page (an Origin header naming
// another site: the spec says a server must refuse it), where ours
// refuses it. (It also reads a POST body of any size: over 4 MiB it
// still answers 200, which is slow to show under the race detector.)
func TestMCPGoStreamableHTTPGaps(t *testing.T) {
	t.Parallel()
	lib := httptest.NewServer(server.NewStreamableHTTPServer(newTestServer()))
	t.Cleanup(lib.Close)
	ours := httptest.NewServer(NewHandler(Config{MCP: newTestServer()}, HTTPOptions{}))
	t.Cleanup(ours.Close)
	hc := newClient(t)
	send := func(url string, body string, origin string) int {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	cases := []struct {
		name, body, origin string
		ours               int
	}{
		{"foreign origin", initBody, "https://evil.example", http.StatusForbidden},
	}
	for _, c := range cases {
		if got := send(ours.URL+HTTPPath, c.body, c.origin); got != c.ours {
			t.Errorf("ours, %s: %d, want %d", c.name, got, c.ours)
		}
		got := send(lib.URL+"/mcp", c.body, c.origin)
		if got == c.ours || got >= 400 {
			t.Logf("mcp-go now refuses %s (%d): revisit the decision in doc.go", c.name, got)
			continue
		}
		t.Logf("mcp-go serves %s: %d", c.name, got)
	}
}
