package mcp

import (
	"context"
	"sync/atomic"

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

// stdioSession is the one client of a stdio connection.
type stdioSession struct {
	conn          *stdioConn
	notifications chan mcpgo.JSONRPCNotification
	initialized   atomic.Bool
	logLevel      atomic.Value // mcpgo.LoggingLevel
	clientInfo    atomic.Value // mcpgo.Implementation
	clientCaps    atomic.Value // mcpgo.ClientCapabilities
	protocol      atomic.Value // string
}

var (
	_ server.ClientSession         = (*stdioSession)(nil)
	_ server.SessionWithLogging    = (*stdioSession)(nil)
	_ server.SessionWithClientInfo = (*stdioSession)(nil)
	_ orderedNotifier              = (*stdioSession)(nil)
)

func newStdioSession(c *stdioConn) *stdioSession {
	return &stdioSession{conn: c, notifications: make(chan mcpgo.JSONRPCNotification, 1024)}
}

func (s *stdioSession) SessionID() string { return "stdio" }

func (s *stdioSession) NotificationChannel() chan<- mcpgo.JSONRPCNotification {
	return s.notifications
}

func (s *stdioSession) Initialize()       { s.initialized.Store(true) }
func (s *stdioSession) Initialized() bool { return s.initialized.Load() }

func (s *stdioSession) SetLogLevel(level mcpgo.LoggingLevel) { s.logLevel.Store(level) }

func (s *stdioSession) GetLogLevel() mcpgo.LoggingLevel {
	if l, ok := s.logLevel.Load().(mcpgo.LoggingLevel); ok {
		return l
	}
	return mcpgo.LoggingLevelError
}

func (s *stdioSession) GetClientInfo() mcpgo.Implementation {
	info, _ := s.clientInfo.Load().(mcpgo.Implementation)
	return info
}

func (s *stdioSession) SetClientInfo(info mcpgo.Implementation) { s.clientInfo.Store(info) }

func (s *stdioSession) GetClientCapabilities() mcpgo.ClientCapabilities {
	c, _ := s.clientCaps.Load().(mcpgo.ClientCapabilities)
	return c
}

func (s *stdioSession) SetClientCapabilities(c mcpgo.ClientCapabilities) { s.clientCaps.Store(c) }

// ProtocolVersion and SetProtocolVersion record the negotiated version.
func (s *stdioSession) ProtocolVersion() string {
	v, _ := s.protocol.Load().(string)
	return v
}

func (s *stdioSession) SetProtocolVersion(v string) { s.protocol.Store(v) }

func (s *stdioSession) sendNotification(ctx context.Context, n mcpgo.JSONRPCNotification) error {
	return s.conn.sendNotification(ctx, n)
}
