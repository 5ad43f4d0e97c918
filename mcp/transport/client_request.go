package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// maxClientRequests bounds the server-to-client requests one connection
// has waiting for an answer.
const maxClientRequests = 64

// clientRequests are the server-to-client requests of a stdio connection
// or an HTTP session (elicitation/create) waiting for the client's
// response.
type clientRequests struct {
	mu      sync.Mutex
	seq     int64
	pending map[string]chan []byte // by JSON id

	// sendMu guards the stdio write queue against its close: a request is
	// sent under the read lock, and close takes the write lock.
	sendMu sync.RWMutex
	closed bool
}

// close stops new requests; the connection's write queue may be closed
// once it returned.
func (r *clientRequests) close() {
	r.sendMu.Lock()
	r.closed = true
	r.sendMu.Unlock()
}

// sendRequest queues b unless the connection is closing.
func (c *stdioConn) sendRequest(ctx context.Context, b []byte) error {
	r := &c.clientReqs
	r.sendMu.RLock()
	defer r.sendMu.RUnlock()
	if r.closed {
		return errConnClosed
	}
	select {
	case c.queue <- outMsg{b: b}:
		return nil
	case <-c.dead:
		return errConnClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ClientRequestError is a JSON-RPC error the client answered a request
// with (a client that does not implement the method, say).
type ClientRequestError struct {
	Method  string
	Code    int
	Message string
}

func (e *ClientRequestError) Error() string {
	return fmt.Sprintf("client answered %s with error %d: %s", e.Method, e.Code, e.Message)
}

// request sends a request to the client and waits for its response (see
// clientRequests.roundTrip).
func (c *stdioConn) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return c.clientReqs.roundTrip(ctx, method, params, c.sendRequest, c.dead)
}

// roundTrip sends a request to the client through send and waits for its
// response: the result, or a *ClientRequestError. It gives up when ctx
// ends or gone closes (the connection or session ended).
func (r *clientRequests) roundTrip(ctx context.Context, method string, params any, send func(context.Context, []byte) error, gone <-chan struct{}) (json.RawMessage, error) {
	r.mu.Lock()
	if len(r.pending) >= maxClientRequests {
		r.mu.Unlock()
		return nil, fmt.Errorf("send %s: %d requests to the client are waiting already", method, maxClientRequests)
	}
	if r.pending == nil {
		r.pending = map[string]chan []byte{}
	}
	r.seq++
	id := fmt.Sprintf(`"cairn-req-%d"`, r.seq)
	ch := make(chan []byte, 1)
	r.pending[id] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.pending, id)
		r.mu.Unlock()
	}()

	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", method, err)
	}
	if err := send(ctx, b); err != nil {
		return nil, fmt.Errorf("send %s: %w", method, err)
	}
	var msg []byte
	select {
	case msg = <-ch:
	case <-gone:
		return nil, errConnClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &resp); err != nil {
		return nil, fmt.Errorf("decode the client's answer to %s: %w", method, err)
	}
	if resp.Error != nil {
		return nil, &ClientRequestError{Method: method, Code: resp.Error.Code, Message: resp.Error.Message}
	}
	return resp.Result, nil
}

// clientAnswered delivers a response to a request sent by request; it
// reports false when id names none of them (a sync ping's answer).
func (c *stdioConn) clientAnswered(id json.RawMessage, msg []byte) bool {
	return c.clientReqs.answered(id, msg)
}

// answered delivers a response to a request sent by roundTrip; it reports
// false when id names none of them.
func (r *clientRequests) answered(id json.RawMessage, msg []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := idKey(id)
	ch, ok := r.pending[key]
	if ok {
		ch <- append([]byte(nil), msg...)
		delete(r.pending, key)
	}
	return ok
}

var _ server.SessionWithElicitation = (*stdioSession)(nil)

// RequestElicitation asks the client's user through elicitation/create
// and waits for the answer.
func (s *stdioSession) RequestElicitation(ctx context.Context, req mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	return elicit(ctx, req, s.conn.request)
}

// elicit sends elicitation/create through request and decodes the answer.
func elicit(ctx context.Context, req mcpgo.ElicitationRequest, request func(context.Context, string, any) (json.RawMessage, error)) (*mcpgo.ElicitationResult, error) {
	raw, err := request(ctx, string(mcpgo.MethodElicitationCreate), req.Params)
	if err != nil {
		return nil, err
	}
	var res mcpgo.ElicitationResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decode elicitation result: %w", err)
	}
	return &res, nil
}
