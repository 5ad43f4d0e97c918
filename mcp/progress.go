package mcp

import (
	"context"
	"sync"

	"github.com/cairnhq/cairn/mcp/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// call is what a tool handler knows about the call it serves: its request
// and how to report progress on it.
type call struct {
	srv   *server.MCPServer
	req   mcpgo.CallToolRequest
	token mcpgo.ProgressToken

	mu       sync.Mutex
	progress float64
}

func newCall(ctx context.Context, req mcpgo.CallToolRequest) *call {
	c := &call{srv: server.ServerFromContext(ctx), req: req}
	if m := req.Params.Meta; m != nil {
		c.token = m.ProgressToken
	}
	return c
}

// wantsProgress reports whether the caller asked for progress notifications.
func (c *call) wantsProgress() bool { return c.token != nil }

// Progress sends one notifications/progress for this call, if the caller
// asked for progress: the counter increases by one each time; total is 0
// when unknown. On our stdio transport the notification is queued before
// the call's response can be, so it can never arrive after it; the call
// blocks while the output queue is full. A send failure (client gone) is
// not the tool's failure and is ignored.
func (c *call) Progress(ctx context.Context, total float64, message string) {
	if c.token == nil {
		return
	}
	c.mu.Lock()
	c.progress++
	p := c.progress
	c.mu.Unlock()
	params := map[string]any{"progressToken": c.token, "progress": p}
	if total > 0 {
		params["total"] = total
	}
	if message != "" {
		params["message"] = message
	}
	if transport.Notify(ctx, transport.NewNotification("notifications/progress", params)) {
		return
	}
	if c.srv != nil {
		_ = c.srv.SendNotificationToClient(ctx, "notifications/progress", params)
	}
}
