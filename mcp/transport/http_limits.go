package transport

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// HTTP resource limits.
const (
	// bodyReadTimeout bounds the reading of one request body: a client
	// that stalls mid-body is cut off.
	bodyReadTimeout = 10 * time.Second
	// freeBodyBytes of each body are read without the shared budget: a
	// normal call always fits.
	freeBodyBytes = bodyChunk
	// bodyBudgetBytes is what request bodies in flight may hold beyond
	// their free bytes, all together.
	bodyBudgetBytes = 16 << 20
	// maxHTTPConns bounds open connections; more wait to be accepted.
	maxHTTPConns = 256
)

// errBodyBudget refuses a body when the bodies in flight hold the budget.
var errBodyBudget = errors.New("server busy: too many large request bodies in flight")

// bodyBudget is the byte budget of request bodies in flight.
type bodyBudget struct {
	used atomic.Int64
	// timeout bounds the reading of one body (0: bodyReadTimeout; tests
	// shorten it).
	timeout time.Duration
}

func (b *bodyBudget) take(n int64) bool {
	if b.used.Add(n) > bodyBudgetBytes {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *bodyBudget) give(n int64) { b.used.Add(-n) }

// bodyChunk is the unit a body is read in.
const bodyChunk = 64 << 10

// readBody reads a request body of at most MaxMessageBytes within
// bodyReadTimeout. It reads in chunks, charging every chunk after the
// first (freeBodyBytes) to the budget as it arrives, so a stalled body
// holds only what it sent; the caller gives the returned charge back
// when done with the body.
func (b *bodyBudget) readBody(w http.ResponseWriter, r *http.Request) (body []byte, charged int64, err error) {
	rc := http.NewResponseController(w)
	timeout := bodyReadTimeout
	if b.timeout > 0 {
		timeout = b.timeout
	}
	_ = rc.SetReadDeadline(time.Now().Add(timeout))
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	src := http.MaxBytesReader(w, r.Body, MaxMessageBytes)
	var chunks [][]byte
	total := 0
	for {
		if total >= freeBodyBytes {
			if !b.take(bodyChunk) {
				return nil, charged, errBodyBudget
			}
			charged += bodyChunk
		}
		chunk := make([]byte, bodyChunk)
		n, e := io.ReadFull(src, chunk)
		chunks = append(chunks, chunk[:n])
		total += n
		if e == io.EOF || e == io.ErrUnexpectedEOF {
			break
		}
		if e != nil {
			return nil, charged, e
		}
	}
	if len(chunks) == 1 {
		return chunks[0], charged, nil
	}
	body = make([]byte, 0, total)
	for _, c := range chunks {
		body = append(body, c...)
	}
	return body, charged, nil
}

// bodyErrorStatus is the status and text answering a body read error.
func bodyErrorStatus(err error) (int, string) {
	var mb *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mb):
		return http.StatusRequestEntityTooLarge, oversizeText(0)
	case errors.Is(err, errBodyBudget):
		return http.StatusServiceUnavailable, errBodyBudget.Error() + "; retry in a moment"
	case errors.As(err, &ne) && ne.Timeout():
		return http.StatusRequestTimeout, fmt.Sprintf("Request Timeout: the body did not arrive within %s", bodyReadTimeout)
	}
	return http.StatusBadRequest, "read request body: " + err.Error()
}

// limitListener accepts at most n connections at once.
type limitListener struct {
	net.Listener
	slots chan struct{}
}

func newLimitListener(l net.Listener, n int) net.Listener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n)}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: sync.OnceFunc(func() { <-l.slots })}, nil
}

type limitConn struct {
	net.Conn
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
