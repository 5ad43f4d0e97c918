package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// Message size limits of the stdio transport.
const (
	// MaxMessageBytes is the largest JSON-RPC message served. A longer line
	// is answered with an Invalid Request error naming the limit.
	MaxMessageBytes = 4 << 20
	// maxRecoverBytes is how much of an oversized line is kept to find its
	// id, so that the client's call fails instead of hanging. Beyond it the
	// line is discarded as it is read and the error carries a null id.
	maxRecoverBytes = 32 << 20
)

// errConnClosed is returned when a message is sent after the connection's
// writer stopped.
var errConnClosed = errors.New("send message: the client connection is closed")

// ServeStdio serves one MCP client over a pair of streams, usually the
// process's stdin and a duplicate of its stdout (see RedirectStdout). It
// returns nil when in reaches EOF (the client went away), after every
// in-flight request has been answered or cancelled and every queued message
// written; it returns ctx's error when ctx ends first, and a read or write
// error if the streams fail.
//
// One Config.MCP serves at most one stdio connection at a time: the
// session's id is "stdio".
func ServeStdio(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	e := newEndpoint(cfg)
	c := newStdioConn(e, out)
	if err := e.mcp.RegisterSession(ctx, c.session); err != nil {
		return fmt.Errorf("register stdio session: %w", err)
	}
	defer e.mcp.UnregisterSession(ctx, c.session.SessionID())
	return c.serve(ctx, in)
}

// outMsg is one line to write.
type outMsg struct {
	b []byte
}

// stdioConn is one stdio connection: a reader loop, request goroutines, a
// forwarder for notifications sent through mcp-go's session channel, and a
// single writer.
type stdioConn struct {
	srv     *endpoint
	out     io.Writer
	session *stdioSession

	queue   chan outMsg   // everything written goes through here, in order
	dead    chan struct{} // closed when the writer stopped (write error or shutdown)
	barrier chan chan struct{}
	slots   chan struct{} // in-flight request slots
	reqs    sync.WaitGroup
	calls   calls

	writeErr   atomic.Pointer[error]
	writerDone chan struct{}
	fwdDone    chan struct{}
	fwdStop    chan struct{}

	// forwarded counts notifications moved from mcp-go's channel.
	forwarded atomic.Int64
	// Sync pings (see syncClient).
	syncMu      sync.Mutex
	syncSeq     int64
	syncPending map[string]chan struct{}
	lastMiss    time.Time    // when the last missed round was counted
	syncMissed  atomic.Int32 // sync pings in a row the client let time out
	// Server-to-client requests (see client_request.go).
	clientReqs clientRequests
	// syncAnswering is set once the client answered one of our pings.
	syncAnswering atomic.Bool
}

func newStdioConn(s *endpoint, out io.Writer) *stdioConn {
	c := &stdioConn{
		srv:        s,
		out:        out,
		queue:      make(chan outMsg, 256),
		dead:       make(chan struct{}),
		barrier:    make(chan chan struct{}),
		slots:      make(chan struct{}, s.maxInFlight),
		writerDone: make(chan struct{}),
		fwdDone:    make(chan struct{}),
		fwdStop:    make(chan struct{}),

		syncPending: map[string]chan struct{}{},
	}
	c.session = newStdioSession(c)
	return c
}

func (c *stdioConn) serve(ctx context.Context, in io.Reader) error {
	go c.writeLoop()
	go c.forwardLoop()

	connCtx, cancel := context.WithCancelCause(ctx)
	goneCtx, gone := context.WithCancelCause(context.Background())
	reqCtx := context.WithValue(c.srv.mcp.WithContext(connCtx, c.session), goneKey{}, goneCtx)

	readErr := c.readLoop(reqCtx, in)

	// The client closed its end (or ctx ended). Requests in flight finish
	// (a write the client sent is not cut off), long waits end at once
	// (see WaitContext), and whatever still runs after shutdownGrace is
	// cancelled. Then everything queued is flushed and the writer stops.
	gone(errClientGone)
	if !waitTimeout(&c.reqs, c.srv.shutdownGrace) {
		cancel(errClientGone)
		c.reqs.Wait()
	}
	cancel(errClientGone)
	close(c.fwdStop)
	<-c.fwdDone
	c.clientReqs.close()
	close(c.queue)
	<-c.writerDone

	if readErr != nil {
		return readErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if p := c.writeErr.Load(); p != nil {
		return *p
	}
	return nil
}

// readLoop reads one JSON-RPC message per line until EOF or ctx ends.
func (c *stdioConn) readLoop(ctx context.Context, in io.Reader) error {
	r := bufio.NewReaderSize(in, 64<<10)
	lines := make(chan lineResult)
	go func() {
		// The reader goroutine may outlive readLoop while blocked in Read
		// when ctx ends first; it exits at the next EOF or error.
		for {
			line, size, err := readLine(r, MaxMessageBytes, maxRecoverBytes)
			select {
			case lines <- lineResult{line, size, err}:
			case <-c.dead:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		var lr lineResult
		select {
		case lr = <-lines:
		case <-ctx.Done():
			return nil
		case <-c.dead:
			return nil
		}
		if lr.size > 0 || len(lr.line) > 0 {
			c.handleLine(ctx, lr.line, lr.size)
		}
		if lr.err != nil {
			if errors.Is(lr.err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read stdin: %w", lr.err)
		}
	}
}

// handleLine dispatches one message: notifications inline (they are quick
// and their order matters), requests and batches on their own goroutine.
func (c *stdioConn) handleLine(ctx context.Context, line []byte, size int) {
	if size > MaxMessageBytes {
		id := json.RawMessage("null")
		if line != nil {
			id = extractID(line)
		}
		c.enqueue(errorLine(id, mcpgo.INVALID_REQUEST, oversizeText(size)))
		return
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return
	}
	if isBatch(trimmed) {
		elems, rerr := splitBatch(trimmed, c.session.ProtocolVersion())
		if rerr != nil {
			c.enqueue(rerr.line())
			return
		}
		c.reqs.Add(1)
		go func() {
			defer c.reqs.Done()
			if b := serveBatch(elems, func(msg []byte) []byte { return c.serveElement(ctx, msg) }); b != nil {
				c.enqueue(b)
			}
		}()
		return
	}
	h, rerr := parseHead(trimmed, "line")
	switch {
	case rerr != nil:
		c.enqueue(rerr.line())
	case !h.HasMethod:
		c.clientResponse(h, trimmed)
	case !h.isRequest():
		c.srv.notification(ctx, &c.calls, h, trimmed)
	default:
		release, ok := c.takeSlot()
		if !ok {
			c.enqueue(errorLine(h.ID, mcpgo.INTERNAL_ERROR, busyText(cap(c.slots))))
			return
		}
		c.reqs.Add(1)
		msg := append([]byte(nil), trimmed...)
		go func() {
			defer c.reqs.Done()
			// The slot is freed before the response is written: a client may
			// send its next request the moment it reads this response.
			defer release()
			b := c.serveRequest(ctx, h, msg)
			release()
			if b != nil {
				c.enqueue(b)
			}
		}()
	}
}

// clientResponse is where every response of the client to a request of
// ours arrives: the answers to requests sent by request
// (client_request.go), else to sync pings.
func (c *stdioConn) clientResponse(h head, msg []byte) {
	if h.hasID() && !c.clientAnswered(h.ID, msg) {
		c.syncAnswered(h.ID)
	}
}

// takeSlot takes an in-flight slot, without waiting; release is
// idempotent.
func (c *stdioConn) takeSlot() (release func(), ok bool) {
	select {
	case c.slots <- struct{}{}:
		return sync.OnceFunc(func() { <-c.slots }), true
	default:
		return nil, false
	}
}

// serveElement serves one message of a batch and returns its answer.
func (c *stdioConn) serveElement(ctx context.Context, msg []byte) []byte {
	h, rerr := parseElement(msg)
	switch {
	case rerr != nil:
		return rerr.line()
	case !h.HasMethod:
		c.clientResponse(h, msg)
		return nil
	case !h.isRequest():
		c.srv.notification(ctx, &c.calls, h, msg)
		return nil
	}
	release, ok := c.takeSlot()
	if !ok {
		return errorLine(h.ID, mcpgo.INTERNAL_ERROR, busyText(cap(c.slots)))
	}
	defer release()
	return c.serveRequest(ctx, h, msg)
}

// serveRequest runs one request and returns its answer, nil when there is
// none (the client cancelled it). Anything the handler sent through
// mcp-go's notification channel is queued before the answer.
func (c *stdioConn) serveRequest(ctx context.Context, h head, msg []byte) []byte {
	fwd := c.forwarded.Load()
	rs, resp := c.srv.request(ctx, &c.calls, h, msg)
	b, err := encodeAnswer(resp)
	if err != nil {
		c.srv.log.Error("mcp: encode response", "err", err)
		b = errorLine(h.ID, mcpgo.INTERNAL_ERROR, err.Error())
	}
	if b == nil || rs == nil {
		return b
	}
	c.flushNotifications()
	if rs.notified.Load() || c.forwarded.Load() != fwd {
		c.syncClient(ctx)
	}
	if rs.cancelled.Load() {
		return nil
	}
	return b
}

// enqueue queues one line for the writer. It blocks while the queue is
// full (back pressure from a client that does not read) and gives up when
// the connection is dead.
func (c *stdioConn) enqueue(b []byte) {
	select {
	case c.queue <- outMsg{b: b}:
	case <-c.dead:
	}
}

// writeLoop is the only writer of the output. It batches what is queued
// into one write and flushes when the queue is empty. After a write error
// it marks the connection dead and discards the rest.
func (c *stdioConn) writeLoop() {
	defer close(c.writerDone)
	w := bufio.NewWriterSize(c.out, 64<<10)
	var err error
	write := func(m outMsg) {
		if err == nil {
			if _, err = w.Write(m.b); err == nil {
				err = w.WriteByte('\n')
			}
		}
	}
	for m := range c.queue {
		write(m)
		for more := true; more && err == nil; {
			select {
			case next, ok := <-c.queue:
				if !ok {
					more = false
					break
				}
				write(next)
			default:
				more = false
			}
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			break
		}
	}
	if err != nil {
		e := fmt.Errorf("write stdout: %w", err)
		c.writeErr.Store(&e)
		close(c.dead)
		for range c.queue { // keep senders from blocking until shutdown
		}
		return
	}
	close(c.dead)
}
