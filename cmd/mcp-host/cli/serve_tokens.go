package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cairnhq/cairn/internal/atomicfile"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/mcp/transport"
)

// httpTokensFile is where serve --http keeps its bearer tokens, under the
// state root, when no --token-file is given.
const httpTokensFile = "http-tokens"

// readTokens reads a token file: one token per line, "NAME TOKEN" (a
// client's name and its token) or a bare TOKEN (named "default", then
// "default-2", ...); blank lines and # comments are skipped. A file that
// others can read, or without a token, is refused.
func readTokens(path string) (map[string]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("read token file %s: it is readable by others (mode %v); chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	toks := map[string]string{}
	bare := 0
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		var name, tok string
		switch len(fields) {
		case 1:
			bare++
			name, tok = transport.DefaultTokenName, fields[0]
			if bare > 1 {
				name = fmt.Sprintf("%s-%d", transport.DefaultTokenName, bare)
			}
		case 2:
			name, tok = fields[0], fields[1]
			if err := ids.Validate("token name", name); err != nil {
				return nil, fmt.Errorf("read token file %s:%d: %w", path, i+1, err)
			}
		default:
			return nil, fmt.Errorf("read token file %s:%d: want \"NAME TOKEN\" or a bare TOKEN", path, i+1)
		}
		if _, dup := toks[name]; dup {
			return nil, fmt.Errorf("read token file %s:%d: the name %q is used twice", path, i+1, name)
		}
		toks[name] = tok
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("read token file %s: it is empty; put a token in it", path)
	}
	return toks, nil
}

// newToken is a fresh random bearer token.
func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// stateTokens reads the state root's token file, creating it (0600) with
// a token named "default" when it does not exist, and adds a token named
// add when add is set and not there yet. created lists the names of the
// tokens it made.
func stateTokens(root, add string) (path string, toks map[string]string, created []string, err error) {
	path = filepath.Join(root, httpTokensFile)
	toks, err = readTokens(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		toks = map[string]string{}
		if add == "" {
			add = transport.DefaultTokenName
		}
	case err != nil:
		return path, nil, nil, err
	}
	if add == "" || toks[add] != "" {
		return path, toks, nil, nil
	}
	if err := ids.Validate("token name", add); err != nil {
		return path, nil, nil, err
	}
	if toks[add], err = newToken(); err != nil {
		return path, nil, nil, err
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return path, nil, nil, fmt.Errorf("create state root: %w", err)
	}
	if err := atomicfile.WriteFile(path, []byte(formatTokens(toks)), 0o600); err != nil {
		return path, nil, nil, fmt.Errorf("write token file: %w", err)
	}
	return path, toks, []string{add}, nil
}

func formatTokens(toks map[string]string) string {
	names := make([]string, 0, len(toks))
	for n := range toks {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# mcp-host serve --http bearer tokens: one \"NAME TOKEN\" per line, one per client.\n")
	for _, n := range names {
		fmt.Fprintf(&b, "%s %s\n", n, toks[n])
	}
	return b.String()
}

// clientLine is how a client is configured with a token.
func clientLine(url, token string) string {
	return fmt.Sprintf("claude mcp add --transport http cairn %s --header \"Authorization: Bearer %s\"", url, token)
}

// httpTokens are the tokens serve --http accepts, and where they are.
type httpTokens struct {
	path    string
	tokens  map[string]string
	created []string // names of tokens made now
}

// httpTokens reads --token-file, or the state root's http-tokens file
// (made on first use; with --dry-run a token is made in memory only).
func (e *env) httpTokens(o serveOptions) (*httpTokens, error) {
	if o.tokenFile != "" {
		toks, err := readTokens(o.tokenFile)
		if err != nil {
			return nil, err
		}
		return &httpTokens{path: o.tokenFile, tokens: toks}, nil
	}
	if e.dryRun {
		tok, err := newToken()
		if err != nil {
			return nil, err
		}
		name := o.addToken
		if name == "" {
			name = transport.DefaultTokenName
		}
		return &httpTokens{tokens: map[string]string{name: tok}, created: []string{name}}, nil
	}
	root, err := e.stateRoot()
	if err != nil {
		return nil, err
	}
	path, toks, created, err := stateTokens(root, o.addToken)
	if err != nil {
		return nil, err
	}
	return &httpTokens{path: path, tokens: toks, created: created}, nil
}

// announce tells where the tokens are and how to configure a client with
// a token made now.
func (t *httpTokens) announce(w io.Writer, url string) {
	if t == nil {
		fmt.Fprintln(w, "mcp-host: no bearer token required (--no-auth): any local process can call this server")
		return
	}
	where := "in memory only (--dry-run)"
	if t.path != "" {
		where = "in " + t.path
	}
	names := make([]string, 0, len(t.tokens))
	for n := range t.tokens {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "mcp-host: HTTP clients need a bearer token: %d token(s) %s (%s)\n", len(t.tokens), where, strings.Join(names, ", "))
	for _, n := range t.created {
		fmt.Fprintf(w, "mcp-host: new token %q; configure its client with:\n  %s\n", n, clientLine(url, t.tokens[n]))
	}
}
