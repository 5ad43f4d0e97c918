package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Defaults of Config.
const (
	// DefaultMaxInFlight is how many requests one connection may have in
	// flight at once (long polls included) before new ones are refused with
	// a "server busy" error.
	DefaultMaxInFlight = 256
	// defaultSyncTimeout bounds the wait for a sync ping's answer from a
	// client that answered one before (see syncClient).
	defaultSyncTimeout = 3 * time.Second
	// defaultShutdownGrace is how long requests in flight when the client
	// closed its end may take before they are cancelled.
	defaultShutdownGrace = 5 * time.Second
)

// Config is what both transports need: the mcp-go server whose
// HandleMessage answers each message, and their limits.
type Config struct {
	// MCP handles the messages.
	MCP *server.MCPServer
	// Log receives the transport's own diagnostics (never stdout).
	// Default: discard.
	Log *slog.Logger
	// MaxInFlight bounds concurrent requests per connection; default
	// DefaultMaxInFlight.
	MaxInFlight int
	// SyncTimeout bounds the wait for the answer to a sync ping (stdio)
	// from a client that answers pings; default 3s.
	SyncTimeout time.Duration
	// UnprovenSyncTimeout bounds that wait while the client has answered
	// none of our pings yet; default 100ms (see stdio_sync.go).
	UnprovenSyncTimeout time.Duration
	// ShutdownGrace is how long requests in flight when the stdio client
	// closed its end may run on before they are cancelled; default 5s.
	ShutdownGrace time.Duration
	// CheckSubscribe, when set, may refuse a resources/subscribe: the
	// client gets RESOURCE_NOT_FOUND with the error's text.
	CheckSubscribe func(ctx context.Context, sess server.ClientSession, uri string) error
}

// endpoint is a Config with its defaults applied.
type endpoint struct {
	mcp           *server.MCPServer
	log           *slog.Logger
	maxInFlight   int
	syncTimeout   time.Duration
	unproven      time.Duration // UnprovenSyncTimeout
	shutdownGrace time.Duration
	checkSub      func(ctx context.Context, sess server.ClientSession, uri string) error
}

func newEndpoint(c Config) *endpoint {
	e := &endpoint{mcp: c.MCP, log: c.Log, maxInFlight: c.MaxInFlight, syncTimeout: c.SyncTimeout, unproven: c.UnprovenSyncTimeout, shutdownGrace: c.ShutdownGrace, checkSub: c.CheckSubscribe}
	if e.log == nil {
		e.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if e.maxInFlight <= 0 {
		e.maxInFlight = DefaultMaxInFlight
	}
	if e.syncTimeout <= 0 {
		e.syncTimeout = defaultSyncTimeout
	}
	if e.unproven <= 0 {
		e.unproven = unprovenSyncTimeout
	}
	if e.shutdownGrace <= 0 {
		e.shutdownGrace = defaultShutdownGrace
	}
	return e
}

// handleSafely runs HandleMessage, turning a panic into an internal error
// (a JSON-RPC error for a request with id, nothing for a notification).
func (e *endpoint) handleSafely(ctx context.Context, id json.RawMessage, msg []byte) (resp any) {
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("mcp: panic while handling a message", "panic", r, "stack", string(debug.Stack()))
			resp = nil
			if id != nil {
				resp = rawLine(errorLine(id, mcpgo.INTERNAL_ERROR, fmt.Sprintf("internal error: %v", r)))
			}
		}
	}()
	return e.mcp.HandleMessage(withOffered(ctx), msg)
}

// busyText refuses a request over the in-flight limit.
func busyText(limit int) string {
	return fmt.Sprintf("server busy: %d requests are in flight; wait for one to finish and retry", limit)
}

// oversizeText refuses a message over MaxMessageBytes.
func oversizeText(size int) string {
	if size <= 0 {
		return fmt.Sprintf("message exceeds the %s limit; send less data per call", humanBytes(MaxMessageBytes))
	}
	return fmt.Sprintf("message of %s exceeds the %s limit; send less data per call", humanBytes(size), humanBytes(MaxMessageBytes))
}
