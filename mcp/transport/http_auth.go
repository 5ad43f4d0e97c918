package transport

import (
	"context"
	"crypto/subtle"
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

// unauthorized refuses a request without a valid token. Cairn serves no
// OAuth protected-resource metadata, so the challenge carries no
// resource_metadata: a client is configured with its token.
func unauthorized(w http.ResponseWriter, r *http.Request) {
	challenge := `Bearer realm="mcp-host"`
	if r.Header.Get("Authorization") != "" {
		challenge += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, "Unauthorized: a bearer token is required (Authorization: Bearer <token>; mcp-host serve --http prints where the tokens are)", http.StatusUnauthorized)
}
