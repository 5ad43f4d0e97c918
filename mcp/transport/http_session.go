package transport

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// HTTP session limits.
const (
	maxHTTPSessions    = 1000
	httpSessionIdle    = time.Hour // a session unused this long is dropped
	httpHeartbeatEvery = 30 * time.Second
)

// httpSession is one client's session, from initialize to DELETE.
type httpSession struct {
	id            string
	token         string                         // the name of the token that opened it
	notifications chan mcpgo.JSONRPCNotification // for the GET stream
	requests      chan outRequest                // requests of ours, for the GET stream
	getWait       time.Duration                  // how long one waits for a GET stream
	clientReqs    clientRequests                 // those waiting for the client's response
	clientState
	resourceSubs
	calls     calls
	listening atomic.Bool // a GET stream is open
	inFlight  atomic.Int64
	lastUsed  atomic.Int64 // unix nanoseconds
	done      chan struct{}
	closeOnce sync.Once
}

var (
	_ server.ClientSession         = (*httpSession)(nil)
	_ server.SessionWithLogging    = (*httpSession)(nil)
	_ server.SessionWithClientInfo = (*httpSession)(nil)
)

func (h *httpSession) SessionID() string { return h.id }
func (h *httpSession) NotificationChannel() chan<- mcpgo.JSONRPCNotification {
	return h.notifications
}
func (h *httpSession) close() { h.closeOnce.Do(func() { close(h.done) }) }

// busy reports whether the session is in use: a call or its GET stream.
func (h *httpSession) busy() bool { return h.listening.Load() || h.inFlight.Load() > 0 }

// sessionTable holds the HTTP sessions. When it is full, a new session
// evicts the least recently used idle one, so that a flood of initialize
// requests never locks a new client out.
type sessionTable struct {
	srv *endpoint
	max int // 0: maxHTTPSessions
	// getWait bounds a request's wait for a GET stream; 0: defaultGETWait.
	getWait time.Duration

	mu       sync.Mutex
	sessions map[string]*list.Element // of *httpSession
	byUse    list.List                // most recently used first
}

// get finds a session and marks it used.
func (st *sessionTable) get(id string) *httpSession {
	st.mu.Lock()
	defer st.mu.Unlock()
	el := st.sessions[id]
	if el == nil {
		return nil
	}
	st.byUse.MoveToFront(el)
	sess := el.Value.(*httpSession)
	sess.lastUsed.Store(time.Now().UnixNano())
	return sess
}

// removeLocked takes a session out of the table.
func (st *sessionTable) removeLocked(sess *httpSession) {
	if el := st.sessions[sess.id]; el != nil {
		st.byUse.Remove(el)
		delete(st.sessions, sess.id)
	}
}

// open makes and registers a session for an initialize request.
func (st *sessionTable) open(ctx context.Context, token string) (*httpSession, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("make session id: %w", err)
	}
	sess := &httpSession{id: hex.EncodeToString(b[:]), token: token, notifications: make(chan mcpgo.JSONRPCNotification, 256), requests: make(chan outRequest), getWait: st.getWait, done: make(chan struct{})}
	if sess.getWait <= 0 {
		sess.getWait = defaultGETWait
	}
	sess.resourceSubs = resourceSubs{sess: sess, check: st.srv.checkSub}
	sess.lastUsed.Store(time.Now().UnixNano())
	var dropped []*httpSession
	st.mu.Lock()
	dropped = st.sweepLocked()
	limit := st.max
	if limit <= 0 {
		limit = maxHTTPSessions
	}
	if len(st.sessions) >= limit {
		if lru := st.leastRecentLocked(); lru != nil {
			st.removeLocked(lru)
			dropped = append(dropped, lru)
		}
	}
	full := len(st.sessions) >= limit
	if !full {
		st.sessions[sess.id] = st.byUse.PushFront(sess)
	}
	st.mu.Unlock()
	for _, d := range dropped {
		st.unregister(d)
	}
	if full {
		return nil, fmt.Errorf("server busy: all %d sessions are in use; end some with DELETE", limit)
	}
	if err := st.srv.mcp.RegisterSession(ctx, sess); err != nil {
		st.forget(sess)
		return nil, fmt.Errorf("register session: %w", err)
	}
	return sess, nil
}

// sweepLocked removes sessions unused for httpSessionIdle (from the
// least recently used end) and returns them.
func (st *sessionTable) sweepLocked() []*httpSession {
	cutoff := time.Now().Add(-httpSessionIdle).UnixNano()
	var out []*httpSession
	for el := st.byUse.Back(); el != nil; {
		sess, prev := el.Value.(*httpSession), el.Prev()
		if sess.lastUsed.Load() >= cutoff {
			break
		}
		if !sess.busy() {
			st.removeLocked(sess)
			out = append(out, sess)
		}
		el = prev
	}
	return out
}

// leastRecentLocked is the idle session used longest ago, or nil.
func (st *sessionTable) leastRecentLocked() *httpSession {
	for el := st.byUse.Back(); el != nil; el = el.Prev() {
		if sess := el.Value.(*httpSession); !sess.busy() {
			return sess
		}
	}
	return nil
}

func (st *sessionTable) forget(sess *httpSession) {
	st.mu.Lock()
	st.removeLocked(sess)
	st.mu.Unlock()
	st.unregister(sess)
}

func (st *sessionTable) unregister(sess *httpSession) {
	sess.close()
	st.srv.mcp.UnregisterSession(context.Background(), sess.id)
}

// lookup finds the session a request names, or answers the request with
// the reason it has none.
func (st *sessionTable) lookup(w http.ResponseWriter, r *http.Request, id []byte, token string) *httpSession {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		writeJSONRPCError(w, http.StatusBadRequest, id, mcpgo.INVALID_REQUEST, "Bad Request: no Mcp-Session-Id header; initialize first")
		return nil
	}
	sess := st.get(sid)
	if sess == nil || sess.token != token {
		writeJSONRPCError(w, http.StatusNotFound, id, mcpgo.INVALID_REQUEST, "session not found: it ended, was evicted, or the server restarted; initialize again")
		return nil
	}
	return sess
}
