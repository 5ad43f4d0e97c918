package transport

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
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

// TestMCPGoStreamableHTTPMixesStreams shows the gap that matters most:
// mcp-go's StreamableHTTPServer, as pinned, has every open POST of a
// session read one notification channel, so the progress of one call
// goes out on another call's stream, with no order to its own response.
// Ours sends a call's progress on that call's stream, before its
// response. A call "hold" waits while a call "chatty" sends progress.
func TestMCPGoStreamableHTTPMixesStreams(t *testing.T) {
	t.Parallel()
	const n = 50
	// send is how each sends a call's progress: mcp-go's
	// SendNotificationToClient, or our Notify (what Cairn's tools use).
	libSend := func(ctx context.Context, params map[string]any) {
		_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress", params)
	}
	ourSend := func(ctx context.Context, params map[string]any) {
		Notify(ctx, NewNotification("notifications/progress", params))
	}
	newServer := func(send func(context.Context, map[string]any)) (*server.MCPServer, chan struct{}, chan struct{}) {
		started, release := make(chan struct{}, 1), make(chan struct{})
		s := server.NewMCPServer("t", "1", server.WithToolCapabilities(false))
		s.AddTool(mcpgo.NewTool("hold"), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return mcpgo.NewToolResultText("held"), nil
		})
		s.AddTool(mcpgo.NewTool("chatty"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			for i := range n {
				send(ctx, map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": i + 1})
			}
			return mcpgo.NewToolResultText("chatted"), nil
		})
		return s, started, release
	}
	hc := newClient(t)
	sse := func(url, sid, body string) (string, string) {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return "", ""
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Error(err)
			return "", ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Header.Get("Mcp-Session-Id"), string(b)
	}
	// stray counts chatty's progress on hold's stream, and whether chatty's
	// own stream had all of its progress before its response.
	stray := func(url string, started, release chan struct{}) (int, bool) {
		sid, _ := sse(url, "", initBody)
		sse(url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		held := make(chan string, 1)
		go func() {
			_, b := sse(url, sid, `{"jsonrpc":"2.0","id":"hold","method":"tools/call","params":{"name":"hold"}}`)
			held <- b
		}()
		<-started
		_, own := sse(url, sid, `{"jsonrpc":"2.0","id":"chatty","method":"tools/call","params":{"name":"chatty","_meta":{"progressToken":"c"}}}`)
		close(release)
		other := <-held
		resp := strings.Index(own, `"id":"chatty"`)
		ordered := resp >= 0 && strings.Count(own[:resp], `"progressToken":"c"`) == n
		return strings.Count(other, `"progressToken":"c"`), ordered
	}

	s, ostarted, orelease := newServer(ourSend)
	ours := httptest.NewServer(NewHandler(Config{MCP: s}, HTTPOptions{}))
	t.Cleanup(ours.Close)

	if got, ordered := stray(ours.URL+HTTPPath, ostarted, orelease); got != 0 || !ordered {
		t.Errorf("ours: %d of chatty's progress notifications on hold's stream, all before its response on its own: %t; want 0 and true", got, ordered)
	}
	// Which stream a notification takes is a race among the streams'
	// readers: a few tries make a false "fixed" unlikely.
	for try := range 3 {
		s, started, release := newServer(libSend)
		lib := httptest.NewServer(server.NewStreamableHTTPServer(s))
		got, ordered := stray(lib.URL+"/mcp", started, release)
		lib.Close()
		t.Logf("mcp-go, try %d: %d of %d progress notifications of one call left on another call's stream (all on its own, before its response: %t)", try+1, got, n, ordered)
		if got > 0 || !ordered {
			return
		}
	}
	t.Errorf("mcp-go kept every progress notification on its call's stream: revisit the decision in doc.go (use its streamable server, wrapped)")
}
