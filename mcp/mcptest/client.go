// Package mcptest is a minimal MCP client over a pair of line streams, for
// tests of Cairn's MCP server: it sends requests and raw lines, matches
// responses to requests by id, and records every message it receives in
// the order it arrived, so that tests can check what was written and in
// which order (progress before the response, say).
package mcptest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// Message is one JSON-RPC message received from the server.
type Message struct {
	// Index is the message's position in the stream, from 0.
	Index  int             `json:"-"`
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
	// Raw is the line as received.
	Raw []byte `json:"-"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// IsNotification reports whether m is a notification.
func (m Message) IsNotification() bool { return m.Method != "" && len(m.ID) == 0 }

// Client talks to one server. It answers the server's ping requests (from
// another goroutine) unless IgnorePings is set before the server sends one.
type Client struct {
	// IgnorePings leaves the server's ping requests unanswered.
	IgnorePings bool

	w      io.Writer
	wmu    sync.Mutex
	nextID int64

	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string]chan Message
	all     []Message
	readErr error
	closed  bool
}

// New starts a client reading the server's output from r and writing
// requests to w. It reads until r ends.
func New(r io.Reader, w io.Writer) *Client {
	c := &Client{w: w, pending: map[string]chan Message{}}
	c.cond = sync.NewCond(&c.mu)
	go c.readLoop(r)
	return c
}

func (c *Client) readLoop(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := append([]byte(nil), sc.Bytes()...)
		var m Message
		if err := json.Unmarshal(line, &m); err != nil {
			m = Message{Method: "<unparsable>", Raw: line}
		}
		m.Raw = line
		c.mu.Lock()
		m.Index = len(c.all)
		c.all = append(c.all, m)
		if m.Method == "" && len(m.ID) > 0 {
			if ch, ok := c.pending[string(m.ID)]; ok {
				delete(c.pending, string(m.ID))
				ch <- m
			}
		}
		if m.Method == "ping" && len(m.ID) > 0 && !c.IgnorePings {
			answer := []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`)
			go c.SendRaw(answer) //nolint:errcheck // the server may be gone
		}
		c.cond.Broadcast()
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.readErr = sc.Err()
	if c.readErr == nil {
		c.readErr = io.EOF
	}
	c.closed = true
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.cond.Broadcast()
	c.mu.Unlock()
}

// ErrClosed is returned by calls whose answer never came: the server's
// output ended.
var ErrClosed = errors.New("mcptest: the server's output ended")

// Request sends a request with a fresh numeric id and returns the id.
func (c *Client) Request(method string, params any) (json.RawMessage, <-chan Message, error) {
	c.mu.Lock()
	c.nextID++
	id := json.RawMessage(strconv.FormatInt(c.nextID, 10))
	ch := make(chan Message, 1)
	if c.closed {
		c.mu.Unlock()
		return nil, nil, ErrClosed
	}
	c.pending[string(id)] = ch
	c.mu.Unlock()
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, nil, err
	}
	if err := c.SendRaw(b); err != nil {
		return nil, nil, err
	}
	return id, ch, nil
}

// Call sends a request and waits for its response. A JSON-RPC error
// response is returned as the message, with a nil error.
func (c *Client) Call(ctx context.Context, method string, params any) (Message, error) {
	_, ch, err := c.Request(method, params)
	if err != nil {
		return Message{}, err
	}
	return Await(ctx, ch)
}

// Await waits for a response from Request.
func Await(ctx context.Context, ch <-chan Message) (Message, error) {
	select {
	case m, ok := <-ch:
		if !ok {
			return Message{}, ErrClosed
		}
		return m, nil
	case <-ctx.Done():
		return Message{}, ctx.Err()
	}
}

// Notify sends a notification.
func (c *Client) Notify(method string, params any) error {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return c.SendRaw(b)
}

// SendRaw writes one line as is (a newline is added).
func (c *Client) SendRaw(line []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	_, err := c.w.Write(buf)
	return err
}

// Initialize performs the initialize handshake as clientName.
func (c *Client) Initialize(ctx context.Context, clientName string) (Message, error) {
	return c.InitializeVersion(ctx, clientName, "2025-11-25")
}

// InitializeVersion performs the initialize handshake as clientName,
// asking for protocol version.
func (c *Client) InitializeVersion(ctx context.Context, clientName, version string) (Message, error) {
	m, err := c.Call(ctx, "initialize", map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": clientName, "version": "1.0.0"},
	})
	if err != nil {
		return m, err
	}
	if m.Error != nil {
		return m, m.Error
	}
	return m, c.Notify("notifications/initialized", nil)
}

// Messages returns every message received so far, in order.
func (c *Client) Messages() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.all...)
}

// WaitFor waits until a received message (any, from the start) satisfies
// match, and returns the first one that does.
func (c *Client) WaitFor(ctx context.Context, match func(Message) bool) (Message, error) {
	defer c.wakeOnDone(ctx)()
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := 0
	for {
		for ; seen < len(c.all); seen++ {
			if match(c.all[seen]) {
				return c.all[seen], nil
			}
		}
		if err := ctx.Err(); err != nil {
			return Message{}, err
		}
		if c.closed {
			return Message{}, ErrClosed
		}
		c.cond.Wait()
	}
}

// wakeOnDone wakes the waiters on c.cond when ctx ends; the function it
// returns stops that.
func (c *Client) wakeOnDone(ctx context.Context) func() bool {
	return context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
}

// Wait blocks until the server's output ends and returns why (io.EOF for
// a clean end).
func (c *Client) Wait(ctx context.Context) error {
	defer c.wakeOnDone(ctx)()
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.closed {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.cond.Wait()
	}
	return c.readErr
}
