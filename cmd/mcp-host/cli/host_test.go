package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/mcp/mcptest"

	"github.com/cairnhq/cairn/store"
)

// serveMCP runs serve in process with args and returns an initialized MCP
// client talking to it, and a func that closes its stdin and returns its
// exit code and stderr.
func (c *cliWS) serveMCP(args ...string) (*mcptest.Client, func() (int, string)) {
	c.t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	args = append([]string{"--state", c.state, "--workspace", c.root}, args...)
	go func() {
		code := Main(context.Background(), append(args, "serve"), Stdio{In: inR, Out: outW, Err: &errb})
		outW.Close()
		done <- code
	}()
	client := mcptest.New(outR, inW)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := client.Initialize(ctx, "cli test"); err != nil {
		c.t.Fatalf("initialize: %v", err)
	}
	var once sync.Once
	var code int
	stop := func() (int, string) {
		once.Do(func() { inW.Close(); code = <-done })
		return code, errb.String()
	}
	c.t.Cleanup(func() { stop() })
	return client, stop
}

// call calls a tool and fails the test on a JSON-RPC or tool error.
func call(t *testing.T, client *mcptest.Client, tool string, args map[string]any) *mcptest.ToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, _, err := client.CallTool(ctx, tool, args, nil)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if r.IsError {
		t.Fatalf("%s: %s", tool, r.Text())
	}
	return r
}

// MCP and the CLI build the session manager through the same host, so the
// MCP compact_session honours sessions.max_archives from the config.
func TestServeCompactHonoursMaxArchives(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, nil)
	if err := os.WriteFile(filepath.Join(c.root, ".cairn", "config.yaml"), []byte("sessions:\n  max_archives: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	client, stop := c.serveMCP()
	call(t, client, "create_session", map[string]any{"session_id": "ses_mcp"})
	for range 4 {
		call(t, client, "append_session_messages", map[string]any{"session_id": "ses_mcp", "messages": []map[string]any{
			{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}}})
		call(t, client, "compact_session", map[string]any{"session_id": "ses_mcp", "summary": "s", "keep_last": 1})
	}
	if code, errOut := stop(); code != 0 {
		t.Fatalf("serve exited %d: %s", code, errOut)
	}
	code, out, errOut := c.run("--json", "sessions", "archives", "ses_mcp")
	if code != 0 {
		t.Fatalf("sessions archives: %d %s", code, errOut)
	}
	var list struct{ Archives []store.Archive }
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Archives) != 2 {
		t.Fatalf("%d archives after 4 MCP compactions with sessions.max_archives 2, want 2", len(list.Archives))
	}
}

// A dry run is the host's memory backends: serve, run and automations
// with --dry-run leave the state root as they found it (here: absent).
func TestDryRunWritesNothingUnderTheStateRoot(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, map[string]string{"hello.yaml": serveHello})
	client, stop := c.serveMCP("--dry-run")
	r := call(t, client, "launch_run", map[string]any{"target": "hello", "wait_seconds": 30})
	if !strings.Contains(string(r.StructuredContent), `"status":"succeeded"`) {
		t.Errorf("dry-run launch_run: %s", r.StructuredContent)
	}
	call(t, client, "create_automation", map[string]any{"key": "tick", "target": "hello", "every": "1h"})
	call(t, client, "create_session", map[string]any{"session_id": "ses_dry"})
	if code, errOut := stop(); code != 0 {
		t.Fatalf("dry-run serve exited %d: %s", code, errOut)
	}
	for _, args := range [][]string{
		{"--dry-run", "run", "hello"},
		{"--dry-run", "automations", "create", "--key", "nightly", "--target", "hello", "--cron", "0 3 * * *"},
		{"--dry-run", "automations", "list"},
		{"--dry-run", "roll", "hello"},
		{"--dry-run", "sessions", "create", "ses_x"},
	} {
		if code, out, errOut := c.run(args...); code != 0 {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	var written []string
	filepath.WalkDir(c.state, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			written = append(written, p)
		}
		return nil
	})
	if len(written) > 0 {
		t.Fatalf("dry runs wrote under the state root: %v", written)
	}
}
