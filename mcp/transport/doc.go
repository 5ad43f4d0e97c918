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
// what came before): at most 100 ms until the client has answered one of
// our pings, and a client that lets two rounds of such pings go unanswered
// is not pinged again (TestSyncWithoutPingAnswers); a late answer turns
// syncing back on. The barrier stays because the TypeScript SDK still
// needs it with progress written strictly before the response
// (TestProgressNeverAfterResponse, and e2e/test's progress test).
//
// # Protocol rules both transports apply
//
// Before mcp-go sees a message: a request's id must be a string or an
// integer (null and fractional ids get -32600), its method a string, its
// params an object (-32602); an id still in flight is refused. A JSON-RPC
// batch is served for a session that negotiated 2025-03-26 only (the one
// version that has them), as one array of answers. A request cancelled by
// notifications/cancelled gets no answer (calls.go). Version 2026-07-28's
// stateless core is not offered: a request declaring it in _meta gets
// UNSUPPORTED_PROTOCOL_VERSION with the versions served, server/discover
// lists only those, and initialize negotiates at most 2025-11-25
// (TestModernProtocolRefused). A resources/subscribe refused by
// Config.CheckSubscribe gets RESOURCE_NOT_FOUND.
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
// SSE response, ahead of its response (a client that accepts only
// application/json gets JSON, without them); a GET stream carries the
// session's other notifications (resource updates). Requests of ours
// (elicitation/create) go on the asking call's POST stream, or on the GET
// stream when no call of the client asks (a run parked after its
// launch_run answered); the client POSTs its response, routed by id
// (http_client_request.go). It refuses foreign
// Origin and Host headers, an MCP-Protocol-Version it does not serve (400),
// and requests without one of the named bearer tokens (the scheme is
// case-insensitive; a 401 carries a Bearer challenge whose
// resource_metadata names the RFC 9728 metadata served, without a token, at
// /.well-known/oauth-protected-resource/mcp). TokenName tells a
// handler which token a request used; a session belongs to its token.
// The session table evicts the least recently used idle session when
// full; bodies are read within a deadline and charged to a shared budget
// beyond their first 64 KiB; ServeHTTP caps open connections.
//
// Why not mcp-go's StreamableHTTPServer, wrapped: it shares one
// notification channel per session among every open stream (a progress
// notification could leave on another stream after its call's response),
// and, as pinned, it serves a POST from a foreign Origin and reads bodies
// of any size (TestMCPGoStreamableHTTPMixesStreams: one call's progress
// leaves on another call's stream; TestMCPGoStreamableHTTPGaps: the
// Origin). Revisit when it orders
// notifications per request and checks Origin.
package transport
