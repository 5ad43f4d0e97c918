package transport

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// HTTPPath is where the streamable HTTP endpoint is served.
const HTTPPath = "/mcp"

// HTTPOptions configure the streamable HTTP transport.
type HTTPOptions struct {
	// Token, when set, is a bearer token a request may carry
	// (Authorization: Bearer <token>), named DefaultTokenName.
	Token string
	// Tokens are named bearer tokens, one per client: name to token. A
	// request must carry one of them (or Token); TokenName tells which.
	Tokens map[string]string
	// NoAuth serves without a token. ServeHTTP refuses to start with no
	// token unless NoAuth is set, and NoAuth on a non-loopback address.
	NoAuth bool
}

// authenticated reports whether requests must carry a token.
func (o HTTPOptions) authenticated() bool { return o.Token != "" || len(o.Tokens) > 0 }

// NewHandler serves MCP over streamable HTTP at /mcp. It refuses
// requests whose Origin header names anything but a loopback host (a web
// page must not drive a local server), requests arriving on a loopback
// address with a foreign Host header (DNS rebinding), requests without the
// bearer token when one is set, and bodies over MaxMessageBytes.
//
// It is our own transport around server.MCPServer.HandleMessage, like
// ServeStdio: a POST answers with JSON, or, once the call sends a
// notification (progress), with an SSE stream on which the call's
// notifications precede its response. (mcp-go's streamable server shares
// one notification channel per session among every open stream, so a
// progress notification could leave on another stream after its call's
// response.) A GET opens the session's stream for notifications not tied
// to a call (notifications/resources/updated); DELETE ends the session.
func NewHandler(cfg Config, o HTTPOptions) http.Handler {
	srv := newEndpoint(cfg)
	return &httpTransport{srv: srv, tokens: newTokens(o), sessions: sessionTable{srv: srv, sessions: map[string]*list.Element{}}}
}

// loopbackOrigin reports whether an Origin header names a loopback host.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return loopbackHost(u.Hostname())
}

func loopbackHost(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// ListenParams say where ServeHTTP listens.
type ListenParams struct {
	// Addr is host:port. An empty host means 127.0.0.1.
	Addr string
	// AllowRemote permits a non-loopback address. Without it such an
	// address is refused.
	AllowRemote bool
	HTTPOptions
	// Ready, when set, is called with the bound address once listening.
	Ready func(addr net.Addr)
}

// ErrRemoteAddr refuses a non-loopback listen address without AllowRemote.
var ErrRemoteAddr = errors.New("address is not a loopback one")

// ErrNoToken refuses to serve HTTP with neither a token nor NoAuth.
var ErrNoToken = errors.New("serving HTTP needs a bearer token")

// ResolveListenAddr applies the loopback default, refuses a remote
// address unless allowed (and then only with a token), and refuses to
// serve without a token unless NoAuth says so on loopback.
func ResolveListenAddr(p ListenParams) (string, error) {
	host, port, err := net.SplitHostPort(p.Addr)
	if err != nil {
		return "", fmt.Errorf("parse listen address %q: %w (use 127.0.0.1:PORT)", p.Addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if !loopbackHost(host) {
		if !p.AllowRemote {
			return "", fmt.Errorf("listen on %s: %w; serve on 127.0.0.1, or pass --allow-remote with --token-file", host, ErrRemoteAddr)
		}
		if !p.authenticated() {
			return "", fmt.Errorf("listen on %s: a non-loopback address needs a bearer token (--token-file)", host)
		}
	}
	if !p.authenticated() && !p.NoAuth {
		return "", fmt.Errorf("listen on %s: %w (a token file, or --no-auth to serve loopback clients without one)", host, ErrNoToken)
	}
	return net.JoinHostPort(host, port), nil
}

// ServeHTTP serves MCP over streamable HTTP until ctx ends, then shuts the
// listener down, giving open requests a few seconds to finish.
func ServeHTTP(ctx context.Context, cfg Config, p ListenParams) error {
	addr, err := ResolveListenAddr(p)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	ln = newLimitListener(ln, maxHTTPConns)
	hs := &http.Server{
		Handler:           NewHandler(cfg, p.HTTPOptions),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	if p.Ready != nil {
		p.Ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutCtx); err != nil {
		_ = hs.Close()
	}
	<-errc
	return nil
}
