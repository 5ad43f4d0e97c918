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
	freeBodyBytes = 64 << 10
	// bodyBudgetBytes is what request bodies in flight may hold beyond
	// their free bytes, all together.
	bodyBudgetBytes = 32 << 20
	// maxHTTPConns bounds open connections; more wait to be accepted.
	maxHTTPConns = 256
)

// errBodyBudget refuses a body when the bodies in flight hold the budget.
var errBodyBudget = errors.New("server busy: too many large request bodies in flight")

// bodyBudget is the byte budget of request bodies in flight.
type bodyBudget struct{ used atomic.Int64 }

func (b *bodyBudget) take(n int64) bool {
	if b.used.Add(n) > bodyBudgetBytes {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *bodyBudget) give(n int64) { b.used.Add(-n) }

// readBody reads a request body of at most MaxMessageBytes within
// bodyReadTimeout, charging what exceeds freeBodyBytes to the budget
// while it reads (the caller gives the returned charge back when done).
func (b *bodyBudget) readBody(w http.ResponseWriter, r *http.Request) (body []byte, charged int64, err error) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	src := http.MaxBytesReader(w, r.Body, MaxMessageBytes)
	buf := make([]byte, 0, 4<<10)
	for {
		if len(buf) == cap(buf) {
			grow := int64(cap(buf))
			if over := int64(cap(buf)*2) - freeBodyBytes; over > 0 {
				need := min(grow, over)
				if !b.take(need) {
					return nil, charged, errBodyBudget
				}
				charged += need
			}
			buf = append(buf, make([]byte, grow)...)[:len(buf)]
		}
		n, e := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if e == io.EOF {
			return buf, charged, nil
		}
		if e != nil {
			return nil, charged, e
		}
	}
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
