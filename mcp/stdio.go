package mcp

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
// One Server serves at most one stdio connection at a time.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	c := newStdioConn(s, out)
	if err := s.mcp.RegisterSession(ctx, c.session); err != nil {
		return fmt.Errorf("register stdio session: %w", err)
	}
	defer s.forgetSession(c.session.SessionID())
	defer s.mcp.UnregisterSession(ctx, c.session.SessionID())
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
	srv     *Server
	out     io.Writer
	session *stdioSession

	queue   chan outMsg   // everything written goes through here, in order
	dead    chan struct{} // closed when the writer stopped (write error or shutdown)
	barrier chan chan struct{}
	slots   chan struct{} // in-flight request slots
	reqs    sync.WaitGroup

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
	syncMissed  atomic.Int32 // sync pings in a row the client let time out
}

func newStdioConn(s *Server, out io.Writer) *stdioConn {
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
	// (see waitContext), and whatever still runs after shutdownGrace is
	// cancelled. Then everything queued is flushed and the writer stops.
	gone(errClientGone)
	if !waitTimeout(&c.reqs, c.srv.shutdownGrace) {
		cancel(errClientGone)
		c.reqs.Wait()
	}
	cancel(errClientGone)
	close(c.fwdStop)
	<-c.fwdDone
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

// errClientGone is the cancellation cause of waits (and, after
// shutdownGrace, of requests) still in flight when the client closed its
// end.
var errClientGone = errors.New("the client closed the connection")

// defaultShutdownGrace is how long requests in flight when the client
// closed its end may take before they are cancelled.
const defaultShutdownGrace = 5 * time.Second

type goneKey struct{}

// waitContext derives a context for a long wait (a long poll, launch_run's
// wait) that also ends when the client closed its end of the connection:
// nobody is left to read the answer. Other work runs on to its end.
func waitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	gone, ok := ctx.Value(goneKey{}).(context.Context)
	if !ok {
		return ctx, func() { cancel(nil) }
	}
	stop := context.AfterFunc(gone, func() { cancel(context.Cause(gone)) })
	return ctx, func() { stop(); cancel(nil) }
}

// waitTimeout waits for wg for at most d and reports whether it finished.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
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

type lineResult struct {
	line []byte
	size int
	err  error
}

// readLine reads up to and excluding the next '\n'. It returns the line
// when it is at most max bytes; a longer line is returned truncated to
// keep bytes (or nil past keep) with size set to its full length, so the
// caller can tell and refuse it without holding an unbounded buffer.
func readLine(r *bufio.Reader, max, keep int) (line []byte, size int, err error) {
	var last, beforeLast byte
	for {
		chunk, e := r.ReadSlice('\n')
		size += len(chunk)
		if n := len(chunk); n > 0 {
			beforeLast, last = last, chunk[n-1]
			if n > 1 {
				beforeLast = chunk[n-2]
			}
		}
		if size <= keep {
			line = append(line, chunk...)
		} else if line != nil {
			line = nil // too long even to find its id: drop what we kept
		}
		if e == bufio.ErrBufferFull {
			continue
		}
		err = e
		break
	}
	if size > 0 && last == '\n' {
		size--
		if size > 0 && beforeLast == '\r' {
			size--
		}
	}
	if line != nil {
		line = line[:size]
	}
	return line, size, err
}

// handleLine dispatches one message: notifications inline (they are quick
// and their order matters), requests on their own goroutine.
func (c *stdioConn) handleLine(ctx context.Context, line []byte, size int) {
	if size > MaxMessageBytes {
		id := json.RawMessage("null")
		if line != nil {
			id = extractID(line)
		}
		c.enqueue(errorLine(id, mcpgo.INVALID_REQUEST, fmt.Sprintf("message of %s exceeds the %s limit; send less data per call", humanBytes(size), humanBytes(MaxMessageBytes))))
		return
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return
	}
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if err := json.Unmarshal(trimmed, &head); err != nil {
		if json.Valid(trimmed) {
			c.enqueue(errorLine(json.RawMessage("null"), mcpgo.INVALID_REQUEST, "Invalid Request: a message must be one JSON object (batches are not supported)"))
			return
		}
		c.enqueue(errorLine(json.RawMessage("null"), mcpgo.PARSE_ERROR, "Parse error: the line is not valid JSON: "+jsonErrorText(err)))
		return
	}
	hasID := len(head.ID) > 0 && !bytes.Equal(head.ID, []byte("null"))
	if head.Method == nil {
		if hasID {
			// A response to a server-initiated request: our sync pings.
			c.syncAnswered(head.ID)
			return
		}
		c.enqueue(errorLine(json.RawMessage("null"), mcpgo.INVALID_REQUEST, "Invalid Request: a message needs a method"))
		return
	}
	if !hasID {
		// A notification: handled in order, on the read loop.
		if resp := c.handle(ctx, nil, trimmed); resp != nil {
			c.writeResponse(resp)
		}
		return
	}
	if !validID(head.ID) {
		c.enqueue(errorLine(json.RawMessage("null"), mcpgo.INVALID_REQUEST, "Invalid Request: id must be a string or a number"))
		return
	}
	select {
	case c.slots <- struct{}{}:
	default:
		c.enqueue(errorLine(head.ID, mcpgo.INTERNAL_ERROR, fmt.Sprintf("server busy: %d requests are in flight; wait for one to finish and retry", cap(c.slots))))
		return
	}
	c.reqs.Add(1)
	msg := append([]byte(nil), trimmed...)
	go func() {
		defer c.reqs.Done()
		defer func() { <-c.slots }()
		rs := &reqState{}
		fwd := c.forwarded.Load()
		resp := c.handle(context.WithValue(ctx, reqStateKey{}, rs), head.ID, msg)
		if resp == nil {
			return
		}
		// Anything the handler sent through mcp-go's notification channel
		// is queued before its response.
		c.flushNotifications()
		if rs.notified.Load() || c.forwarded.Load() != fwd {
			c.syncClient(ctx)
		}
		c.writeResponse(resp)
	}()
}

// handle runs HandleMessage, turning a panic into an internal error.
func (c *stdioConn) handle(ctx context.Context, id json.RawMessage, msg []byte) any {
	return c.srv.handleSafely(ctx, id, msg)
}

// rawLine is a pre-encoded message.
type rawLine []byte

func (c *stdioConn) writeResponse(resp any) {
	if b, ok := resp.(rawLine); ok {
		c.enqueue(b)
		return
	}
	b, err := json.Marshal(resp)
	if err != nil {
		c.srv.log.Error("mcp: encode response", "err", err)
		return
	}
	c.enqueue(b)
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

// reqState is what a request's goroutine learns while its handler runs.
type reqState struct {
	notified atomic.Bool // it sent a notification (progress)
}

type reqStateKey struct{}

// sendNotification queues a notification in order with everything this
// goroutine queued before and after it. It is how progress is sent.
func (c *stdioConn) sendNotification(ctx context.Context, n mcpgo.JSONRPCNotification) error {
	b, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode notification %s: %w", n.Method, err)
	}
	select {
	case c.queue <- outMsg{b: b}:
		if rs, ok := ctx.Value(reqStateKey{}).(*reqState); ok {
			rs.notified.Store(true)
		}
		return nil
	case <-c.dead:
		return errConnClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flushNotifications returns once every notification that was in mcp-go's
// session channel when it was called has been queued for writing.
func (c *stdioConn) flushNotifications() {
	done := make(chan struct{})
	select {
	case c.barrier <- done:
		<-done
	case <-c.fwdDone:
	}
}

// defaultSyncTimeout bounds the wait for a sync ping's answer; a client
// that lets syncMaxMissed pass in a row turns syncing off for the rest of
// the connection.
const (
	defaultSyncTimeout = 3 * time.Second
	syncMaxMissed      = 2
)

// syncClient makes sure the client has processed every notification
// queued so far before the caller writes a response. Order on the wire is
// not enough for every client: the official TypeScript SDK handles
// notifications in a later microtask but responses at once, so a progress
// notification read in the same chunk as its call's response is reported
// as having an "unknown token". syncClient sends a ping request (which
// every MCP peer must answer) behind the notifications and waits for the
// answer: a client answers it only after it handled what came before.
func (c *stdioConn) syncClient(ctx context.Context) {
	if c.syncMissed.Load() >= syncMaxMissed {
		return
	}
	c.syncMu.Lock()
	c.syncSeq++
	id := fmt.Sprintf(`"cairn-sync-%d"`, c.syncSeq)
	ch := make(chan struct{})
	c.syncPending[id] = ch
	c.syncMu.Unlock()
	defer func() {
		c.syncMu.Lock()
		delete(c.syncPending, id)
		c.syncMu.Unlock()
	}()
	c.enqueue([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`))
	t := time.NewTimer(c.srv.syncTimeout)
	defer t.Stop()
	select {
	case <-ch:
		c.syncMissed.Store(0)
	case <-t.C:
		if c.syncMissed.Add(1) == syncMaxMissed {
			c.srv.log.Warn("mcp: the client does not answer ping requests; progress notifications may reach it after responses")
		}
	case <-ctx.Done(): // the client is gone
	case <-c.dead:
	}
}

// syncAnswered delivers the answer to a sync ping.
func (c *stdioConn) syncAnswered(id json.RawMessage) {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if ch, ok := c.syncPending[string(id)]; ok {
		close(ch)
		delete(c.syncPending, string(id))
	}
}

// forwardLoop moves notifications from the session channel (where mcp-go's
// SendNotificationToClient puts them) into the write queue, and serves
// flush barriers.
func (c *stdioConn) forwardLoop() {
	defer close(c.fwdDone)
	ch := c.session.notifications
	forward := func(n mcpgo.JSONRPCNotification) {
		b, err := json.Marshal(n)
		if err != nil {
			c.srv.log.Error("mcp: encode notification", "method", n.Method, "err", err)
			return
		}
		c.enqueue(b)
		c.forwarded.Add(1)
	}
	drain := func() {
		for {
			select {
			case n := <-ch:
				forward(n)
			default:
				return
			}
		}
	}
	for {
		select {
		case n := <-ch:
			forward(n)
		case done := <-c.barrier:
			drain()
			close(done)
		case <-c.fwdStop:
			drain()
			return
		}
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

// errorLine encodes a JSON-RPC error response.
func errorLine(id json.RawMessage, code int, msg string) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	return b
}

// extractID finds the id of an oversized message, if it is a valid one.
func extractID(line []byte) json.RawMessage {
	var head struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &head) != nil || !validID(head.ID) {
		return json.RawMessage("null")
	}
	return head.ID
}

// validID reports whether a raw JSON-RPC id is a string or a number.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '"':
		var s string
		return json.Unmarshal(id, &s) == nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var n json.Number
		return json.Unmarshal(id, &n) == nil
	}
	return false
}

func jsonErrorText(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	return err.Error()
}

func humanBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
