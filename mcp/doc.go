// Package mcp is Cairn's Model Context Protocol adapter: the tool and
// resource definitions an agent client sees, their handlers, the
// notifications they send, and the transports that carry them (stdio and
// streamable HTTP). It holds no domain logic: every handler calls the same
// domain API as the command line (runs, sessions, automations) and turns
// the answer into a tool result.
//
// # Errors
//
// A domain failure (an unknown run, an answer to a run that is not waiting,
// a bad cron string) is a tool result with isError set and a message a
// person can act on. Only protocol faults (invalid JSON, an unknown method or
// tool, a message over the size limit) are JSON-RPC errors. A panicking
// handler is recovered and reported as a tool error; the session goes on.
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
// Requests are served concurrently, up to Params.MaxInFlight at once, so
// long polls never block a quick call. When the client closes stdin, long
// waits end at once, other requests run to their end (for a few seconds at
// most), every answer is flushed, and ServeStdio returns.
//
// # The HTTP transport
//
// HTTPHandler is streamable HTTP at /mcp, also our own around
// HandleMessage: a POST's progress notifications travel on that POST's own
// SSE response, ahead of its response; a GET stream carries the session's
// other notifications (resource updates). It refuses foreign Origin and
// Host headers and, when configured, requests without the bearer token.
//
// # Resources
//
// cairn://runs/{id} (the run as JSON) and cairn://runs/{id}/output (its
// journal) are resource templates. Subscriptions are tracked per session;
// a subscribed run is watched through the run engine's change hook and by
// polling the store, so a change made by another process is announced too.
package mcp
