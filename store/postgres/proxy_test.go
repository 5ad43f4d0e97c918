package postgres

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// cutProxy forwards TCP connections to a PostgreSQL server and, once
// armed, drops the server's next reply on any connection and cuts every
// connection: the client then cannot tell whether what it sent last (a
// COMMIT) took effect. While refusing, new connections are closed at once.
type cutProxy struct {
	ln     net.Listener
	target string
	armed  atomic.Bool
	refuse atomic.Bool
	cut    chan struct{} // closed when the armed cut happened

	mu    sync.Mutex
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// newCutProxy starts a proxy to the server of rawURL and returns it with
// rawURL rewritten to go through it.
func newCutProxy(t *testing.T, rawURL string) (*cutProxy, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: u.Host, cut: make(chan struct{}), conns: make(map[net.Conn]bool)}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	u.Host = ln.Addr().String()
	return p, u.String()
}

// arm makes the next reply of the server the last: it is dropped and
// every connection closed; with refuse set, new ones are refused until
// allow.
func (p *cutProxy) arm(refuse bool) {
	p.refuse.Store(refuse)
	p.armed.Store(true)
}

func (p *cutProxy) allow() { p.refuse.Store(false) }

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.refuse.Load() {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.track(c, s)
		p.wg.Add(2)
		go p.pipe(s, c, false)
		go p.pipe(c, s, true)
	}
}

func (p *cutProxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = true
	}
}

// pipe copies from src to dst; fromServer copies are the ones a cut drops.
func (p *cutProxy) pipe(dst, src net.Conn, fromServer bool) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && fromServer && p.armed.CompareAndSwap(true, false) {
			p.cutAll()
			close(p.cut)
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *cutProxy) cutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

func (p *cutProxy) close() {
	p.ln.Close()
	p.cutAll()
	p.wg.Wait()
}
