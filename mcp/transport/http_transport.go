package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// httpTransport is the streamable HTTP transport (see NewHandler).
type httpTransport struct {
	srv      *endpoint
	tokens   *tokens
	sessions sessionTable
	bodies   bodyBudget
}

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
	if t.tokens.required() && isMetadataPath(r.URL.Path) {
		serveMetadata(w, r)
		return
	}
	// Any other path is not found, token or not: a client looking for
	// documents Cairn does not serve (OAuth authorization-server metadata)
	// learns they are absent.
	if r.URL.Path != HTTPPath {
		http.NotFound(w, r)
		return
	}
	if t.tokens.required() {
		name, ok := t.tokens.match(r)
		if !ok {
			unauthorized(w, r)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), tokenKey{}, name))
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
	writeJSONRPC(w, status, errorLine(id, code, msg))
}

func writeJSONRPC(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// versionHeaderOK checks the MCP-Protocol-Version header: a version this
// server does not offer gets 400 with the versions it does.
func versionHeaderOK(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool {
	v := r.Header.Get(mcpgo.HeaderProtocolVersion)
	if v == "" || offered(v) {
		return true
	}
	if len(id) == 0 || !validID(id) {
		id = json.RawMessage("null")
	}
	e := mcpgo.UnsupportedProtocolVersionError{Version: v, Supported: offeredVersions}.JSONRPCError()
	e.Error.Message = fmt.Sprintf("Bad Request: unsupported %s %q; this server speaks %s", mcpgo.HeaderProtocolVersion, v, strings.Join(offeredVersions, ", "))
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": e.Error})
	writeJSONRPC(w, http.StatusBadRequest, b)
	return false
}

func (t *httpTransport) post(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		writeJSONRPCError(w, http.StatusUnsupportedMediaType, nil, mcpgo.INVALID_REQUEST, "Unsupported Media Type: send application/json")
		return
	}
	acc := parseAccept(r.Header.Get("Accept"))
	if !acc.json && !acc.sse {
		http.Error(w, "Not Acceptable: accept application/json or text/event-stream", http.StatusNotAcceptable)
		return
	}
	body, charged, err := t.bodies.readBody(w, r)
	defer t.bodies.give(charged)
	if err != nil {
		status, text := bodyErrorStatus(err)
		code := mcpgo.INVALID_REQUEST
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
			code = mcpgo.INTERNAL_ERROR
		}
		writeJSONRPCError(w, status, nil, code, text)
		return
	}
	body = bytes.TrimSpace(body)
	token, _ := TokenName(r.Context())
	stream := &sseWriter{w: w, noSSE: !acc.sse, sseOnly: !acc.json}
	if isBatch(body) {
		t.postBatch(w, r, body, token, stream)
		return
	}
	h, rerr := parseHead(body, "body")
	if rerr != nil {
		writeJSONRPCError(w, http.StatusBadRequest, rerr.id, rerr.code, rerr.text)
		return
	}
	if h.isRequest() {
		if b := refuseModern(h); b != nil {
			writeJSONRPC(w, http.StatusBadRequest, b)
			return
		}
	}
	var sess *httpSession
	if h.Method == string(mcpgo.MethodInitialize) && h.isRequest() {
		if sess, err = t.sessions.open(r.Context(), token); err != nil {
			w.Header().Set("Retry-After", "1")
			writeJSONRPCError(w, http.StatusServiceUnavailable, h.ID, mcpgo.INTERNAL_ERROR, err.Error())
			return
		}
		w.Header().Set("Mcp-Session-Id", sess.id)
	} else {
		if !versionHeaderOK(w, r, h.ID) {
			return
		}
		if sess = t.sessions.lookup(w, r, h.ID, token); sess == nil {
			return
		}
	}
	ctx := t.srv.mcp.WithContext(r.Context(), sess)
	if !h.isRequest() {
		t.serveElement(ctx, sess, stream, h, body)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if n := sess.inFlight.Add(1); n > int64(t.srv.maxInFlight) {
		sess.inFlight.Add(-1)
		writeJSONRPCError(w, http.StatusOK, h.ID, mcpgo.INTERNAL_ERROR, busyText(t.srv.maxInFlight))
		return
	}
	defer sess.inFlight.Add(-1)
	b, cancelled := t.serveRequest(ctx, sess, stream, h, body)
	stream.answer(b, cancelled)
}

// postBatch serves a batch (protocol version 2025-03-26 only).
func (t *httpTransport) postBatch(w http.ResponseWriter, r *http.Request, body []byte, token string, stream *sseWriter) {
	if !versionHeaderOK(w, r, nil) {
		return
	}
	sess := t.sessions.lookup(w, r, nil, token)
	if sess == nil {
		return
	}
	elems, rerr := splitBatch(body, sess.ProtocolVersion())
	if rerr != nil {
		writeJSONRPCError(w, http.StatusBadRequest, rerr.id, rerr.code, rerr.text)
		return
	}
	sess.inFlight.Add(1)
	defer sess.inFlight.Add(-1)
	ctx := t.srv.mcp.WithContext(r.Context(), sess)
	b := serveBatch(elems, func(msg []byte) []byte {
		h, rerr := parseElement(msg)
		switch {
		case rerr != nil:
			return rerr.line()
		case !h.isRequest():
			t.serveElement(ctx, sess, stream, h, msg)
			return nil
		}
		b, cancelled := t.serveRequest(ctx, sess, stream, h, msg)
		if cancelled {
			return nil
		}
		return b
	})
	stream.answer(b, false)
}

// serveElement serves a notification, or a response of the client to a
// request of ours (the one place those arrive on HTTP).
func (t *httpTransport) serveElement(ctx context.Context, sess *httpSession, _ *sseWriter, h head, msg []byte) {
	if !h.HasMethod {
		sess.clientAnswered(h, msg) // a response to a request of ours
		return
	}
	t.srv.notification(ctx, &sess.calls, h, msg)
}

// serveRequest runs one request; its notifications go on stream.
func (t *httpTransport) serveRequest(ctx context.Context, sess *httpSession, stream *sseWriter, h head, msg []byte) (answer []byte, cancelled bool) {
	ctx = context.WithValue(ctx, notifierKey{}, stream)
	rs, resp := t.srv.request(ctx, &sess.calls, h, msg)
	b, err := encodeAnswer(resp)
	if err != nil {
		b = errorLine(h.ID, mcpgo.INTERNAL_ERROR, err.Error())
	}
	return b, rs != nil && rs.cancelled.Load()
}

// get serves the session's stream of notifications not tied to a call.
func (t *httpTransport) get(w http.ResponseWriter, r *http.Request) {
	if !parseAccept(r.Header.Get("Accept")).sse || r.Header.Get("Accept") == "" {
		http.Error(w, "Not Acceptable: the GET stream is text/event-stream", http.StatusNotAcceptable)
		return
	}
	if !versionHeaderOK(w, r, nil) {
		return
	}
	token, _ := TokenName(r.Context())
	sess := t.sessions.lookup(w, r, nil, token)
	if sess == nil {
		return
	}
	if !sess.listening.CompareAndSwap(false, true) {
		http.Error(w, "Conflict: this session already has a GET stream open", http.StatusConflict)
		return
	}
	defer sess.listening.Store(false)
	stream := &sseWriter{w: w}
	stream.start()
	if _, err := io.WriteString(w, ": stream open\n\n"); err != nil {
		return
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	heartbeat := time.NewTicker(httpHeartbeatEvery)
	defer heartbeat.Stop()
	for {
		select {
		case n := <-sess.notifications:
			if err := stream.sendNotification(r.Context(), n); err != nil {
				return
			}
		case req := <-sess.requests:
			err := stream.sendMessage(req.b)
			req.sent <- err
			if err != nil {
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
	if !versionHeaderOK(w, r, nil) {
		return
	}
	token, _ := TokenName(r.Context())
	sess := t.sessions.lookup(w, r, nil, token)
	if sess == nil {
		return
	}
	t.sessions.forget(sess)
	w.WriteHeader(http.StatusOK)
}
