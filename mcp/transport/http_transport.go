package transport

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
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

// httpTransport is the streamable HTTP transport (see NewHandler).
type httpTransport struct {
	srv   *endpoint
	token []byte

	mu       sync.Mutex
	sessions map[string]*httpSession
}

// httpSession is one client's session, from initialize to DELETE.
type httpSession struct {
	id            string
	notifications chan mcpgo.JSONRPCNotification // for the GET stream
	clientState
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

func (t *httpTransport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" && !loopbackOrigin(origin) {
		http.Error(w, fmt.Sprintf("Forbidden: origin %q is not a local one", origin), http.StatusForbidden)
		return
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil {
		host, _, err := net.SplitHostPort(la.String())
		if err == nil && loopbackHost(host) && !loopbackHostHeader(r.Host) {
			http.Error(w, fmt.Sprintf("Forbidden: Host %q is not a local one", r.Host), http.StatusForbidden)
			return
		}
	}
	if len(t.token) > 0 {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), t.token) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcp-host"`)
			http.Error(w, "Unauthorized: a bearer token is required (see --token-file)", http.StatusUnauthorized)
			return
		}
	}
	if r.URL.Path != HTTPPath {
		http.NotFound(w, r)
		return
	}
	switch r.Method {
	case http.MethodPost:
		t.post(w, r)
	case http.MethodGet:
		t.get(w, r)
	case http.MethodDelete:
		t.delete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

func loopbackHostHeader(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return loopbackHost(host)
}

// writeJSONRPCError answers with a JSON-RPC error object and an HTTP status.
func writeJSONRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(errorLine(id, code, msg), '\n'))
}

// session finds the session a request names.
func (t *httpTransport) session(w http.ResponseWriter, r *http.Request, id json.RawMessage) *httpSession {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		writeJSONRPCError(w, http.StatusBadRequest, id, mcpgo.INVALID_REQUEST, "Bad Request: no Mcp-Session-Id header; initialize first")
		return nil
	}
	t.mu.Lock()
	sess := t.sessions[sid]
	t.mu.Unlock()
	if sess == nil {
		writeJSONRPCError(w, http.StatusNotFound, id, mcpgo.INVALID_REQUEST, "session not found: it ended or the server restarted; initialize again")
		return nil
	}
	sess.lastUsed.Store(time.Now().UnixNano())
	return sess
}

// newSession makes and registers a session for an initialize request.
func (t *httpTransport) newSession(ctx context.Context) (*httpSession, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	sess := &httpSession{id: hex.EncodeToString(b[:]), notifications: make(chan mcpgo.JSONRPCNotification, 256), done: make(chan struct{})}
	sess.lastUsed.Store(time.Now().UnixNano())
	t.mu.Lock()
	t.sweepLocked()
	if len(t.sessions) >= maxHTTPSessions {
		t.mu.Unlock()
		return nil, fmt.Errorf("too many sessions (%d); end some with DELETE", maxHTTPSessions)
	}
	t.sessions[sess.id] = sess
	t.mu.Unlock()
	if err := t.srv.mcp.RegisterSession(ctx, sess); err != nil {
		t.forget(sess)
		return nil, err
	}
	return sess, nil
}

// sweepLocked drops sessions unused for httpSessionIdle.
func (t *httpTransport) sweepLocked() {
	cutoff := time.Now().Add(-httpSessionIdle).UnixNano()
	for id, sess := range t.sessions {
		if sess.lastUsed.Load() < cutoff && !sess.listening.Load() && sess.inFlight.Load() == 0 {
			delete(t.sessions, id)
			sess.close()
			t.srv.mcp.UnregisterSession(context.Background(), id)
		}
	}
}

func (t *httpTransport) forget(sess *httpSession) {
	t.mu.Lock()
	delete(t.sessions, sess.id)
	t.mu.Unlock()
	sess.close()
	t.srv.mcp.UnregisterSession(context.Background(), sess.id)
}

func (t *httpTransport) post(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		writeJSONRPCError(w, http.StatusUnsupportedMediaType, nil, mcpgo.INVALID_REQUEST, "Unsupported Media Type: send application/json")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxMessageBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeJSONRPCError(w, http.StatusRequestEntityTooLarge, nil, mcpgo.INVALID_REQUEST, oversizeText(0))
			return
		}
		writeJSONRPCError(w, http.StatusBadRequest, nil, mcpgo.PARSE_ERROR, "read request body: "+err.Error())
		return
	}
	body = bytes.TrimSpace(body)
	head, code, text := parseHead(body, "body")
	if code == 0 && head.hasID() && !validID(head.ID) {
		code, text = mcpgo.INVALID_REQUEST, badIDText
	}
	if code != 0 {
		writeJSONRPCError(w, http.StatusBadRequest, nil, code, text)
		return
	}
	hasID := head.hasID()

	var sess *httpSession
	if head.Method != nil && *head.Method == string(mcpgo.MethodInitialize) {
		if sess, err = t.newSession(r.Context()); err != nil {
			writeJSONRPCError(w, http.StatusServiceUnavailable, head.ID, mcpgo.INTERNAL_ERROR, err.Error())
			return
		}
		w.Header().Set("Mcp-Session-Id", sess.id)
	} else if sess = t.session(w, r, head.ID); sess == nil {
		return
	}

	ctx := t.srv.mcp.WithContext(r.Context(), sess)
	if head.Method == nil || !hasID {
		// A notification, or a response to a server request: no answer.
		if head.Method != nil {
			t.srv.handleSafely(ctx, nil, body)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if n := sess.inFlight.Add(1); n > int64(t.srv.maxInFlight) {
		sess.inFlight.Add(-1)
		writeJSONRPCError(w, http.StatusOK, head.ID, mcpgo.INTERNAL_ERROR, busyText(t.srv.maxInFlight))
		return
	}
	defer sess.inFlight.Add(-1)

	stream := &sseWriter{w: w}
	ctx = context.WithValue(ctx, notifierKey{}, stream)
	resp := t.srv.handleSafely(ctx, head.ID, body)
	if resp == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	b, ok := resp.(rawLine)
	if !ok {
		if b, err = json.Marshal(resp); err != nil {
			writeJSONRPCError(w, http.StatusInternalServerError, head.ID, mcpgo.INTERNAL_ERROR, "encode response: "+err.Error())
			return
		}
	}
	if stream.finish(b) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

// sseWriter turns a POST's answer into an SSE stream at its first
// notification; the response is then the stream's last event.
type sseWriter struct {
	w       http.ResponseWriter
	mu      sync.Mutex
	started bool
	failed  bool
}

func (s *sseWriter) event(b []byte) error {
	if !s.started {
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("Connection", "keep-alive")
		s.w.WriteHeader(http.StatusOK)
		s.started = true
	}
	if _, err := fmt.Fprintf(s.w, "event: message\ndata: %s\n\n", b); err != nil {
		s.failed = true
		return err
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

func (s *sseWriter) sendNotification(_ context.Context, n mcpgo.JSONRPCNotification) error {
	b, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode notification %s: %w", n.Method, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		return errConnClosed
	}
	return s.event(b)
}

// finish writes the response as the last event when the stream started,
// and reports whether it did.
func (s *sseWriter) finish(resp []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return false
	}
	if !s.failed {
		_ = s.event(resp)
	}
	return true
}

// get serves the session's stream of notifications not tied to a call.
func (t *httpTransport) get(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		http.Error(w, "Not Acceptable: the GET stream is text/event-stream", http.StatusNotAcceptable)
		return
	}
	sess := t.session(w, r, nil)
	if sess == nil {
		return
	}
	if !sess.listening.CompareAndSwap(false, true) {
		http.Error(w, "Conflict: this session already has a GET stream open", http.StatusConflict)
		return
	}
	defer sess.listening.Store(false)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, ": stream open\n\n"); err != nil {
		return
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	stream := &sseWriter{w: w, started: true}
	heartbeat := time.NewTicker(httpHeartbeatEvery)
	defer heartbeat.Stop()
	for {
		select {
		case n := <-sess.notifications:
			if err := stream.sendNotification(r.Context(), n); err != nil {
				return
			}
		case <-heartbeat.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		case <-r.Context().Done():
			return
		case <-sess.done:
			return
		}
	}
}

func (t *httpTransport) delete(w http.ResponseWriter, r *http.Request) {
	sess := t.session(w, r, nil)
	if sess == nil {
		return
	}
	t.forget(sess)
	w.WriteHeader(http.StatusOK)
}
