package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// reqState is what a request's goroutine learns while its handler runs.
type reqState struct {
	notified  atomic.Bool // it sent a notification (progress)
	cancelled atomic.Bool // the client cancelled it: it gets no answer
}

type reqStateKey struct{}

// calls are the requests of one client in flight, by id, so that
// notifications/cancelled can mark one (the spec: a cancelled request is
// not answered) and a second request with an id still in use is refused.
type calls struct {
	mu sync.Mutex
	m  map[string]*reqState
}

// start records a request; it reports false when its id is in use.
func (c *calls) start(id json.RawMessage) (*reqState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*reqState{}
	}
	if _, dup := c.m[idKey(id)]; dup {
		return nil, false
	}
	rs := &reqState{}
	c.m[idKey(id)] = rs
	return rs, true
}

func (c *calls) end(id json.RawMessage) {
	c.mu.Lock()
	delete(c.m, idKey(id))
	c.mu.Unlock()
}

// cancelled marks the request a notifications/cancelled names. mcp-go,
// which sees the notification next, cancels the request's context.
func (c *calls) cancelled(h head) {
	if h.Method != string(mcpgo.MethodNotificationCancelled) {
		return
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(h.Params, &p) != nil || !validID(p.RequestID) {
		return
	}
	c.mu.Lock()
	rs := c.m[idKey(p.RequestID)]
	c.mu.Unlock()
	if rs != nil {
		rs.cancelled.Store(true)
	}
}

// idKey is an id as a map key: its compact JSON.
func idKey(id json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, id) != nil {
		return string(id)
	}
	return buf.String()
}

// inUseText refuses a request whose id is that of one still in flight.
const inUseText = "Invalid Request: a request with this id is still in flight; use a new id for each request"

// offeredVersions are the protocol versions served, newest first:
// those with the initialize handshake. 2026-07-28's stateless core
// (server/discover, per-request _meta, subscriptions/listen) is not
// offered: its requests are refused with the list of versions to use, and
// a client negotiates down (see TestModernProtocolRefused).
var offeredVersions = mcpgo.LegacyProtocolVersions()

// offered reports whether a protocol version is one served.
func offered(v string) bool {
	for _, o := range offeredVersions {
		if o == v {
			return true
		}
	}
	return false
}

// refuseModern answers a request that declares, in its _meta, a protocol
// version this server does not offer; nil for any other request.
func refuseModern(h head) []byte {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(h.Params, &p) != nil || p.Meta == nil {
		return nil
	}
	var v string
	if json.Unmarshal(p.Meta[mcpgo.MetaKeyProtocolVersion], &v) != nil || v == "" || offered(v) {
		return nil
	}
	e := mcpgo.UnsupportedProtocolVersionError{Version: v, Supported: offeredVersions}.JSONRPCError()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": h.ID, "error": e.Error})
	return b
}

// request serves one request of a client whose calls are cs: it refuses
// an unoffered protocol version and an id in use, else runs the handler.
// It returns the request's state (nil when refused) and its answer (nil
// when HandleMessage gave none). The caller drops the answer when the
// state says cancelled.
func (e *endpoint) request(ctx context.Context, cs *calls, h head, msg []byte) (*reqState, any) {
	if b := refuseModern(h); b != nil {
		return nil, rawLine(b)
	}
	rs, ok := cs.start(h.ID)
	if !ok {
		return nil, rawLine(errorLine(h.ID, mcpgo.INVALID_REQUEST, inUseText))
	}
	defer cs.end(h.ID)
	ctx = context.WithValue(ctx, reqStateKey{}, rs)
	return rs, e.handleSafely(ctx, h.ID, msg)
}

// notification serves one notification of a client whose calls are cs.
func (e *endpoint) notification(ctx context.Context, cs *calls, h head, msg []byte) {
	cs.cancelled(h)
	e.handleSafely(ctx, nil, msg)
}

// withOffered tells mcp-go (server/discover) which versions are served.
func withOffered(ctx context.Context) context.Context {
	return server.WithSupportedProtocolVersions(ctx, offeredVersions)
}
