package transport

import (
	"context"
	"sync/atomic"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// stdioSession is the one client of a stdio connection.
type stdioSession struct {
	conn          *stdioConn
	notifications chan mcpgo.JSONRPCNotification
	clientState
	resourceSubs
}

var (
	_ server.ClientSession         = (*stdioSession)(nil)
	_ server.SessionWithLogging    = (*stdioSession)(nil)
	_ server.SessionWithClientInfo = (*stdioSession)(nil)
	_ orderedNotifier              = (*stdioSession)(nil)
)

func newStdioSession(c *stdioConn) *stdioSession {
	s := &stdioSession{conn: c, notifications: make(chan mcpgo.JSONRPCNotification, 1024)}
	s.resourceSubs = resourceSubs{sess: s, check: c.srv.checkSub}
	return s
}

func (s *stdioSession) SessionID() string { return "stdio" }

func (s *stdioSession) NotificationChannel() chan<- mcpgo.JSONRPCNotification {
	return s.notifications
}

// clientState is what mcp-go keeps per client session, the same for the
// stdio and HTTP transports: embedded in both.
type clientState struct {
	initialized atomic.Bool
	logLevel    atomic.Value // mcpgo.LoggingLevel
	clientInfo  atomic.Value // mcpgo.Implementation
	clientCaps  atomic.Value // mcpgo.ClientCapabilities
	protocol    atomic.Value // string
}

func (c *clientState) Initialize()       { c.initialized.Store(true) }
func (c *clientState) Initialized() bool { return c.initialized.Load() }

func (c *clientState) SetLogLevel(level mcpgo.LoggingLevel) { c.logLevel.Store(level) }

func (c *clientState) GetLogLevel() mcpgo.LoggingLevel {
	if l, ok := c.logLevel.Load().(mcpgo.LoggingLevel); ok {
		return l
	}
	return mcpgo.LoggingLevelError
}

func (c *clientState) GetClientInfo() mcpgo.Implementation {
	info, _ := c.clientInfo.Load().(mcpgo.Implementation)
	return info
}

func (c *clientState) SetClientInfo(info mcpgo.Implementation) { c.clientInfo.Store(info) }

func (c *clientState) GetClientCapabilities() mcpgo.ClientCapabilities {
	caps, _ := c.clientCaps.Load().(mcpgo.ClientCapabilities)
	return caps
}

func (c *clientState) SetClientCapabilities(caps mcpgo.ClientCapabilities) { c.clientCaps.Store(caps) }

// ProtocolVersion and SetProtocolVersion record the negotiated version.
func (c *clientState) ProtocolVersion() string {
	v, _ := c.protocol.Load().(string)
	return v
}

func (c *clientState) SetProtocolVersion(v string) { c.protocol.Store(v) }

func (s *stdioSession) sendNotification(ctx context.Context, n mcpgo.JSONRPCNotification) error {
	return s.conn.sendNotification(ctx, n)
}
