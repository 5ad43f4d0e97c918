package transport

import (
	"context"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// notifierKey carries a request's own orderedNotifier (an HTTP POST's
// response stream).
type notifierKey struct{}

// orderedNotifier is a session that can queue a notification in order with
// the responses of the goroutine that sends it (our stdio session).
type orderedNotifier interface {
	sendNotification(ctx context.Context, n mcpgo.JSONRPCNotification) error
}

// Notify sends a notification on the ordered path of the request ctx
// belongs to: an HTTP POST's own response stream, or the stdio session's
// queue, where it is queued before the request's response can be. It
// reports false when ctx has no such path (another transport): the caller
// then sends through mcp-go. A send failure (client gone) is ignored.
func Notify(ctx context.Context, n mcpgo.JSONRPCNotification) bool {
	if on, ok := ctx.Value(notifierKey{}).(orderedNotifier); ok {
		_ = on.sendNotification(ctx, n)
		return true
	}
	return NotifySession(ctx, server.ClientSessionFromContext(ctx), n)
}

// NotifySession sends a notification to sess in order with everything
// queued for it, when sess is a stdio session of this package, and
// reports whether it was one.
func NotifySession(ctx context.Context, sess server.ClientSession, n mcpgo.JSONRPCNotification) bool {
	on, ok := sess.(orderedNotifier)
	if !ok {
		return false
	}
	_ = on.sendNotification(ctx, n)
	return true
}

// NewNotification is a JSON-RPC notification with params.
func NewNotification(method string, params map[string]any) mcpgo.JSONRPCNotification {
	return mcpgo.JSONRPCNotification{
		JSONRPC: mcpgo.JSONRPC_VERSION,
		Notification: mcpgo.Notification{
			Method: method,
			Params: mcpgo.NotificationParams{AdditionalFields: params},
		},
	}
}
