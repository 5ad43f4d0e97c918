package mcp

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/server"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/mcp/transport"
)

// Every call is made by an agent: agent:<client name> over stdio,
// agent:<token name> over HTTP (httpPrincipal). Ownership and the
// policy go by that principal, not by connection, so an automation an
// agent created stays its own after it reconnects, and two clients with
// different names never touch each other's automations. Each connection
// also gets an id of its own (conn_...), recorded beside the principal in
// the audit trail, which tells two windows of one editor apart.

// stdioSessionID is the id the stdio transport gives its one session.
const stdioSessionID = "stdio"

// principal is who makes the call in ctx.
func (s *Server) principal(ctx context.Context) access.Principal {
	if sess := server.ClientSessionFromContext(ctx); sess != nil && sess.SessionID() != stdioSessionID {
		return s.httpPrincipal(ctx)
	}
	return access.Agent(s.clientName(ctx))
}

// httpPrincipal is the principal of a call over HTTP: the name of the
// bearer token it presented (one token per client, each a principal), or
// the client's name on a server without tokens (--no-auth).
func (s *Server) httpPrincipal(ctx context.Context) access.Principal {
	if name, ok := transport.TokenName(ctx); ok && name != "" {
		return access.Agent(name)
	}
	return access.Agent(s.clientName(ctx))
}

// connections gives each initialized session a connection id.
type connections struct {
	mu  sync.Mutex
	ids map[string]string // session id -> connection id
}

// open gives session id a new connection id (a stdio session id is
// reused by the next connection).
func (c *connections) open(sessionID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil {
		c.ids = map[string]string{}
	}
	c.ids[sessionID] = ids.New("conn")
}

func (c *connections) close(sessionID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.ids, sessionID)
}

// connection is the id of the connection making the call in ctx ("" when
// it did not initialize).
func (s *Server) connection(ctx context.Context) string {
	sess := server.ClientSessionFromContext(ctx)
	if sess == nil {
		return ""
	}
	return s.connectionOf(sess.SessionID())
}

// connectionOf is the connection id of session id.
func (s *Server) connectionOf(sessionID string) string {
	s.conns.mu.Lock()
	defer s.conns.mu.Unlock()
	return s.conns.ids[sessionID]
}
