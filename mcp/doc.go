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
// before any response is queued. Requests are served concurrently, up to
// Params.MaxInFlight at once, so long polls never block a quick call.
//
// # Resources
//
// cairn://runs/{id} (the run as JSON) and cairn://runs/{id}/output (its
// journal) are resource templates. Subscriptions are tracked per session;
// a subscribed run is watched through the run engine's change hook and by
// polling the store, so a change made by another process is announced too.
package mcp
