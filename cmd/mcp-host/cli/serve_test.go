package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The end-to-end tests of serve, with the real binary over stdio, are in
// package mcp/e2e; these run the command in process.

const serveHello = `name: hello
description: Greet
steps:
  - id: greet
    exec: ["echo", "hello"]
`

// mcpLines is an MCP session as stdin lines: initialize, then requests.
func mcpLines(requests ...string) string {
	lines := []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cli test","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	}
	return strings.Join(append(lines, requests...), "\n") + "\n"
}

// responses maps the ids of the JSON-RPC responses in out to them.
func responses(t *testing.T, out string) map[string]json.RawMessage {
	t.Helper()
	got := map[string]json.RawMessage{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout holds a line that is not JSON-RPC: %q", sc.Text())
		}
		if len(m.ID) > 0 && m.Method == "" { // not a request of the server's (its sync ping)
			got[string(m.ID)] = append(json.RawMessage(nil), sc.Bytes()...)
		}
	}
	return got
}

func TestServeStdioInProcess(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, map[string]string{"hello.yaml": serveHello})
	code, out, errOut := c.runIn(mcpLines(
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_targets","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_session","arguments":{"session_id":"cli-chat"}}}`,
	), "serve")
	if code != 0 {
		t.Fatalf("serve exited %d: %s", code, errOut)
	}
	got := responses(t, out)
	for _, id := range []string{"0", "1", "2", "3"} {
		if _, ok := got[id]; !ok {
			t.Fatalf("no response to request %s; stdout:\n%s", id, out)
		}
	}
	if !strings.Contains(string(got["2"]), `\"name\":\"hello\"`) {
		t.Errorf("list_targets: %s", got["2"])
	}
	if !strings.Contains(string(got["3"]), `"created":true`) {
		t.Errorf("create_session: %s", got["3"])
	}
	// The session is in the store, for every other process to see.
	code, out, _ = c.run("--json", "sessions", "list")
	if code != 0 || !strings.Contains(out, "cli-chat") {
		t.Errorf("sessions list after serve: %d %s", code, out)
	}
}

func TestServeDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, map[string]string{"hello.yaml": serveHello})
	code, out, errOut := c.runIn(mcpLines(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_session","arguments":{"session_id":"dry"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"launch_run","arguments":{"target":"hello","wait_seconds":30}}}`,
	), "--dry-run", "serve")
	if code != 0 {
		t.Fatalf("serve --dry-run exited %d: %s", code, errOut)
	}
	if got := responses(t, out); len(got) != 3 {
		t.Errorf("responses: %v", got)
	}
	if _, err := os.Stat(c.state); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(c.state)
		t.Errorf("--dry-run serve wrote under the state root: %v", entries)
	}
}

func TestServeFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := filepath.Join(dir, "open-token")
	if err := os.WriteFile(open, []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty-token")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"token without http", []string{"serve", "--token-file", open}, ExitUsage, "--http"},
		{"remote without permission", []string{"serve", "--http", "0.0.0.0:8765"}, ExitUsage, "loopback"},
		{"remote without token", []string{"serve", "--http", "0.0.0.0:8765", "--allow-remote"}, ExitUsage, "token"},
		{"bad address", []string{"serve", "--http", "8765"}, ExitUsage, "127.0.0.1:PORT"},
		{"token readable by others", []string{"serve", "--http", "127.0.0.1:0", "--token-file", open}, ExitFailure, "chmod 600"},
		{"empty token", []string{"serve", "--http", "127.0.0.1:0", "--token-file", empty}, ExitFailure, "empty"},
		{"arguments", []string{"serve", "extra"}, ExitUsage, "argument"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCLIWS(t, nil)
			code, _, errOut := c.run(tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d (want %d), stderr %q should mention %q", code, tc.code, errOut, tc.want)
			}
		})
	}
}
