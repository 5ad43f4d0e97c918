package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/syncbuf"
)

// httpServer is a running `mcp-host serve --http`.
type httpServer struct {
	cmd    *exec.Cmd
	url    string
	token  string // the token it printed, if it made one
	stderr *syncbuf.Buffer
}

var (
	servingRe = regexp.MustCompile(`serving MCP at (http://127\.0\.0\.1:\d+/mcp)`)
	tokenRe   = regexp.MustCompile(`Authorization: Bearer ([0-9a-f]+)`)
)

// serveHTTP starts `mcp-host serve --http 127.0.0.1:0` with extra flags
// and waits for it to print where it serves.
func (e *env) serveHTTP(extra ...string) *httpServer {
	e.t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--http", "127.0.0.1:0"}, extra...)...)
	cmd.Dir, cmd.Env = e.root, e.environ()
	s := &httpServer{cmd: cmd, stderr: &syncbuf.Buffer{}}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(s.stderr, pw)
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); pw.Close(); close(done) }()
	e.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if m := servingRe.FindStringSubmatch(sc.Text()); m != nil {
			s.url = m[1]
		}
		if m := tokenRe.FindStringSubmatch(sc.Text()); m != nil {
			s.token = m[1]
		}
		if s.url != "" && (s.token != "" || strings.Contains(sc.Text(), "no bearer token")) {
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if s.url == "" {
		e.t.Fatalf("serve --http did not say where it serves: %s", s.stderr.String())
	}
	return s
}

const httpInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`

func httpPost(t *testing.T, hc *http.Client, url, token, sid, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func httpClientFor(t *testing.T) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// TestHTTPTokenByDefault: serve --http makes a token (0600, under the
// state root) and prints the client's configuration line; a request
// without it gets 401 with a Bearer challenge; --no-auth opts out.
func TestHTTPTokenByDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.serveHTTP()
	if s.token == "" {
		t.Fatalf("no token printed: %s", s.stderr.String())
	}
	fi, err := os.Stat(filepath.Join(e.state, "http-tokens"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v, want mode 0600", fi, err)
	}
	hc := httpClientFor(t)
	resp, _ := httpPost(t, hc, s.url, "", "", httpInit)
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("without a token: %d %q, want 401 with a Bearer challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp, body := httpPost(t, hc, s.url, s.token, "", httpInit); resp.StatusCode != http.StatusOK {
		t.Errorf("with the printed token: %d %s", resp.StatusCode, body)
	}
	open := e.serveHTTP("--no-auth")
	if resp, body := httpPost(t, hc, open.url, "", "", httpInit); resp.StatusCode != http.StatusOK {
		t.Errorf("--no-auth without a token: %d %s", resp.StatusCode, body)
	}
}

// TestHTTPSessionFlood: after 2,000 initialize requests (twice the
// session table) a new client still connects.
func TestHTTPSessionFlood(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.serveHTTP()
	hc := httpClientFor(t)
	var wg sync.WaitGroup
	var failed sync.Once
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 2000; i += 4 {
				if resp, body := httpPost(t, hc, s.url, s.token, "", httpInit); resp.StatusCode != http.StatusOK {
					failed.Do(func() { t.Errorf("initialize %d: %d %s", i, resp.StatusCode, body) })
				}
			}
		}()
	}
	wg.Wait()
	start := time.Now()
	resp, _ := httpPost(t, hc, s.url, s.token, "", httpInit)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("a new client after the flood: %d", resp.StatusCode)
	}
	if resp, body := httpPost(t, hc, s.url, s.token, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != http.StatusOK || !strings.Contains(body, "launch_run") {
		t.Fatalf("tools/list after the flood: %d %s", resp.StatusCode, body)
	}
	t.Logf("after 2,000 initialize requests a new client initialized and listed tools in %v", time.Since(start))
}

// TestHTTPStalledBodies: 150 clients each send 1 MiB of a 4 MB body and
// stall; the server stays under 100 MB of RSS and another client's calls
// succeed.
func TestHTTPStalledBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.serveHTTP()
	addr := strings.TrimSuffix(strings.TrimPrefix(s.url, "http://"), "/mcp")
	t.Logf("server RSS before: %.1f MiB", float64(rssBytes(t, s.cmd.Process.Pid))/(1<<20))
	chunk := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 1<<20))
	var wg sync.WaitGroup
	conns := make([]net.Conn, 150)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns[i] = c
		t.Cleanup(func() { c.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json\r\nAuthorization: Bearer %s\r\nContent-Length: 4000000\r\n\r\n", addr, s.token)
			_ = c.SetWriteDeadline(time.Now().Add(30 * time.Second))
			_, _ = c.Write(chunk) // refused ones stop reading: the write may fail
		}()
	}
	wg.Wait()
	hc := httpClientFor(t)
	resp, body := httpPost(t, hc, s.url, s.token, "", httpInit)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("another client's initialize: %d %s", resp.StatusCode, body)
	}
	if resp, body := httpPost(t, hc, s.url, s.token, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_targets","arguments":{}}}`); resp.StatusCode != http.StatusOK || !strings.Contains(body, "hello") {
		t.Fatalf("another client's call: %d %s", resp.StatusCode, body)
	}
	rss := rssBytes(t, s.cmd.Process.Pid)
	t.Logf("server RSS with 150 stalled bodies: %.1f MiB", float64(rss)/(1<<20))
	if rss > 100<<20 {
		t.Errorf("server RSS %d bytes, want under 100 MB", rss)
	}
}

// rssBytes reads a process's resident set size from /proc.
func rssBytes(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
