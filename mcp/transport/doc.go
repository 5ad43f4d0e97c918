// Package transport carries Cairn's MCP messages: JSON-RPC over stdio and
// over streamable HTTP, both around server.MCPServer.HandleMessage, with
// the session state mcp-go expects, ordered notifications, size limits,
// and the stdout redirection that keeps the protocol stream clean. It
// knows nothing of tools: package mcp builds the mcp-go server and hands it
// over in a Config.
//
// # The stdio transport
//
// mcp-go's own stdio server writes notifications from a goroutine of their
// own, so a progress notification could reach the client after the response
// of the call it belongs to (and a strict client then reports an unknown
// progress token). ServeStdio is our own loop around
// server.MCPServer.HandleMessage instead: every outgoing message, response
// or notification, goes through one FIFO queue drained by a single writer
// goroutine. A handler enqueues its progress notifications synchronously,
// so they are queued before its response can be; notifications mcp-go sends
// through the session's channel are flushed into the queue (a barrier)
// before any response is queued.
//
// Order on the wire is not enough for every client: the official
// TypeScript SDK handles a notification in a later microtask but a response
// at once, so a progress notification read in the same chunk as its call's
// response is still reported as unknown. So before writing the response of
// a call that sent notifications, the transport sends a ping request behind
// them and waits for its answer (a client answers only after it handled
// what came before); a client that lets two such pings go unanswered is not
// pinged again.
//
// Requests are served concurrently, up to Config.MaxInFlight at once, so
// long polls never block a quick call. When the client closes stdin, long
// waits end at once, other requests run to their end (for a few seconds at
// most), every answer is flushed, and ServeStdio returns.
//
// # The HTTP transport
//
// NewHandler is streamable HTTP at /mcp, also our own around
// HandleMessage: a POST's progress notifications travel on that POST's own
// SSE response, ahead of its response; a GET stream carries the session's
// other notifications (resource updates). It refuses foreign Origin and
// Host headers and, when configured, requests without the bearer token.
package transport
