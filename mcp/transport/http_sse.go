package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// accepts is what a POST's Accept header allows.
type accepts struct{ json, sse bool }

// parseAccept reads an Accept header. No header accepts both.
func parseAccept(h string) accepts {
	if strings.TrimSpace(h) == "" {
		return accepts{true, true}
	}
	var a accepts
	for _, part := range strings.Split(h, ",") {
		mt, _, _ := strings.Cut(part, ";")
		switch strings.ToLower(strings.TrimSpace(mt)) {
		case "application/json", "application/*":
			a.json = true
		case "text/event-stream", "text/*":
			a.sse = true
		case "*/*":
			a.json, a.sse = true, true
		}
	}
	return a
}

// sseWriter turns a POST's answer into an SSE stream at its first
// notification; the response is then the stream's last event. A client
// that accepts JSON only gets no notifications on its POST.
type sseWriter struct {
	w       http.ResponseWriter
	noSSE   bool // the client accepts JSON only
	sseOnly bool // the client accepts SSE only
	mu      sync.Mutex
	started bool
	failed  bool
}

func (s *sseWriter) start() {
	if s.started {
		return
	}
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	s.w.WriteHeader(http.StatusOK)
	s.started = true
}

func (s *sseWriter) event(b []byte) error {
	s.start()
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
	if s.noSSE {
		return nil
	}
	b, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode notification %s: %w", n.Method, err)
	}
	return s.sendMessage(b)
}

// sendMessage writes one encoded message (a notification, or a request
// of ours) as an event of the stream.
func (s *sseWriter) sendMessage(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		return errConnClosed
	}
	return s.event(b)
}

// answer writes a POST's answer: resp (nil for none) as the stream's last
// event when the stream started or the client accepts SSE only, else as
// JSON. A request the client cancelled gets no answer: its stream ends.
func (s *sseWriter) answer(resp []byte, cancelled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case cancelled || resp == nil:
		if !s.started {
			s.w.WriteHeader(http.StatusAccepted)
		}
	case s.started || s.sseOnly:
		if !s.failed {
			_ = s.event(resp)
		}
	default:
		s.w.Header().Set("Content-Type", "application/json")
		s.w.WriteHeader(http.StatusOK)
		_, _ = s.w.Write(append(resp, '\n'))
	}
}
