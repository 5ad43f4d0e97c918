package transport

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Server-to-client requests over streamable HTTP. A request made while
// one of the client's calls is being served (its handler asks) goes on
// that call's POST response stream; any other (a run that parked after
// its launch_run answered) goes on the session's GET stream. The client's
// response arrives as a POST whose body is a JSON-RPC response
// (serveElement), routed by id like on stdio.

// defaultGETWait is how long a request waits for the client to open its
// GET stream.
const defaultGETWait = 10 * time.Second

// errNoGETStream refuses a request with nowhere to go.
var errNoGETStream = errors.New("the HTTP client has no GET stream open to receive it (GET /mcp with Accept: text/event-stream)")

var _ server.SessionWithElicitation = (*httpSession)(nil)

// RequestElicitation asks the client's user through elicitation/create
// and waits for the answer.
func (h *httpSession) RequestElicitation(ctx context.Context, req mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	return elicit(ctx, req, h.request)
}

// request sends a request to the client and waits for its response.
func (h *httpSession) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return h.clientReqs.roundTrip(ctx, method, params, h.sendRequest, h.done)
}

// sendRequest puts b on the POST stream of the call ctx belongs to, when
// its client accepts SSE, else on the session's GET stream. A client opens
// its GET stream just after initialize, maybe after a question is ready:
// it is waited for up to the session's getWait, and a stream that fails
// under the request is replaced by the client's next one within that time.
func (h *httpSession) sendRequest(ctx context.Context, b []byte) error {
	if stream, ok := ctx.Value(notifierKey{}).(*sseWriter); ok && !stream.noSSE {
		return stream.sendMessage(b)
	}
	deadline := time.NewTimer(h.getWait)
	defer deadline.Stop()
	for {
		req := outRequest{b: b, sent: make(chan error, 1)}
		select {
		case h.requests <- req:
		case <-deadline.C:
			return errNoGETStream
		case <-h.done:
			return errConnClosed
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case err := <-req.sent:
			if err == nil {
				return nil
			}
		case <-h.done:
			return errConnClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// outRequest is a request of ours handed to the GET stream, which tells
// whether it wrote it.
type outRequest struct {
	b    []byte
	sent chan error
}

// clientAnswered delivers a response of the client to a request of ours;
// a response to none (a late one, after its request gave up) is dropped.
func (h *httpSession) clientAnswered(hd head, msg []byte) {
	if hd.hasID() {
		h.clientReqs.answered(hd.ID, msg)
	}
}
