package mcp

import (
	"context"
	"io"
	"net/http"

	"github.com/cairnhq/cairn/mcp/transport"
)

// The server's entry points: each hands the mcp-go server to a transport
// of package transport, which owns the plumbing.

// ServeStdio serves one MCP client over a pair of streams (see
// transport.ServeStdio), usually stdin and the file RedirectStdout
// returns.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	return transport.ServeStdio(ctx, s.transportConfig(), in, out)
}

// HTTPHandler serves MCP over streamable HTTP at /mcp (see
// transport.NewHandler).
func (s *Server) HTTPHandler(o transport.HTTPOptions) http.Handler {
	return transport.NewHandler(s.transportConfig(), o)
}

// ServeHTTP serves MCP over streamable HTTP until ctx ends (see
// transport.ServeHTTP).
func (s *Server) ServeHTTP(ctx context.Context, p transport.ListenParams) error {
	return transport.ServeHTTP(ctx, s.transportConfig(), p)
}

func (s *Server) transportConfig() transport.Config {
	return transport.Config{
		MCP: s.mcp, Log: s.log, MaxInFlight: s.maxInFlight,
		SyncTimeout: s.syncTimeout, UnprovenSyncTimeout: s.unproven, ShutdownGrace: s.shutdownGrace,
		CheckSubscribe: s.checkSubscribe,
	}
}
