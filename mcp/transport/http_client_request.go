package transport

import (
	"context"
	"encoding/json"
	"errors"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Server-to-client requests over streamable HTTP. A request made while
// one of the client's calls is being served (its handler asks) goes on
// that call's POST response stream; any other (a run that parked after
// its launch_run answered) goes on the session's GET stream. The client's
// response arrives as a POST whose body is a JSON-RPC response
// (serveElement), routed by id like on stdio.

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
// its client accepts SSE, else queues it for the session's GET stream.
func (h *httpSession) sendRequest(ctx context.Context, b []byte) error {
	if stream, ok := ctx.Value(notifierKey{}).(*sseWriter); ok && !stream.noSSE {
		return stream.sendMessage(b)
	}
	if !h.listening.Load() {
		return errNoGETStream
	}
	select {
	case h.requests <- b:
		return nil
	case <-h.done:
		return errConnClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// clientAnswered delivers a response of the client to a request of ours;
// a response to none (a late one, after its request gave up) is dropped.
func (h *httpSession) clientAnswered(hd head, msg []byte) {
	if hd.hasID() {
		h.clientReqs.answered(hd.ID, msg)
	}
}
