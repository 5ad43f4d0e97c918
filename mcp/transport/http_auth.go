package transport

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
)

// DefaultTokenName names HTTPOptions.Token among the named tokens.
const DefaultTokenName = "default"

// tokenKey carries the name of the bearer token a request used.
type tokenKey struct{}

// TokenName is the name of the bearer token the HTTP request ctx belongs
// to used (HTTPOptions.Tokens' key), so that each client is a principal.
// It reports false off HTTP and on a server without tokens (--no-auth).
func TokenName(ctx context.Context) (string, bool) {
	name, ok := ctx.Value(tokenKey{}).(string)
	return name, ok
}

// tokens are the bearer tokens an HTTP server accepts, by name.
type tokens struct {
	names  []string
	values [][]byte
}

func newTokens(o HTTPOptions) *tokens {
	t := &tokens{}
	all := map[string]string{}
	for name, v := range o.Tokens {
		all[name] = v
	}
	if o.Token != "" {
		all[DefaultTokenName] = o.Token
	}
	for name := range all {
		t.names = append(t.names, name)
	}
	sort.Strings(t.names)
	for _, name := range t.names {
		t.values = append(t.values, []byte(all[name]))
	}
	return t
}

func (t *tokens) required() bool { return len(t.names) > 0 }

// match returns the name of the token a request carries. Every token is
// compared, in constant time, so the time taken tells nothing.
func (t *tokens) match(r *http.Request) (string, bool) {
	got, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		return "", false
	}
	name, found := "", false
	for i, v := range t.values {
		if subtle.ConstantTimeCompare([]byte(got), v) == 1 && !found {
			name, found = t.names[i], true
		}
	}
	return name, found
}

// bearer extracts the credentials of a Bearer Authorization header; the
// scheme is case-insensitive (RFC 9110 §11.1).
func bearer(h string) (string, bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred = strings.TrimSpace(cred)
	return cred, cred != ""
}

// metadataPath is where the endpoint's OAuth 2.0 Protected Resource
// Metadata (RFC 9728) is served when a token is required: under the
// well-known prefix, with the endpoint's path inserted (§3.1), and at the
// bare prefix for clients that look there first.
const metadataPath = "/.well-known/oauth-protected-resource"

// baseURL is the scheme and host a request reached, or "" when its Host
// could not be quoted in a header parameter.
func baseURL(r *http.Request) string {
	if r.Host == "" || strings.ContainsAny(r.Host, "\"\\ ,") {
		return ""
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// serveMetadata answers the protected-resource metadata, which needs no
// token: the resource is the endpoint, and it takes a bearer token in the
// Authorization header. It names no authorization server: Cairn's tokens
// are made by mcp-host serve --http (or --add-token), not by OAuth, and a
// client is configured with one.
func serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	base := baseURL(r)
	if base == "" {
		http.Error(w, "Bad Request: no usable Host header", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"resource":                 base + HTTPPath,
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "Cairn (mcp-host)",
	})
}

// isMetadataPath reports whether a path is one serveMetadata answers.
func isMetadataPath(p string) bool { return p == metadataPath || p == metadataPath+HTTPPath }

// unauthorized refuses a request without a valid token. The Bearer
// challenge carries resource_metadata, the URL of the protected-resource
// metadata (RFC 9728 §5.1; MCP's authorization rules), and
// error="invalid_token" when a token was sent but matched none.
func unauthorized(w http.ResponseWriter, r *http.Request) {
	challenge := `Bearer realm="mcp-host"`
	if base := baseURL(r); base != "" {
		challenge += `, resource_metadata="` + base + metadataPath + HTTPPath + `"`
	}
	if r.Header.Get("Authorization") != "" {
		challenge += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, "Unauthorized: a bearer token is required (Authorization: Bearer <token>; mcp-host serve --http prints where the tokens are)", http.StatusUnauthorized)
}
