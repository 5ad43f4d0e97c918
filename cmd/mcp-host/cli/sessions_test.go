package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
)

// sessionsCLI runs mcp-host commands against one state root and workspace.
type sessionsCLI struct{ *cliWS }

func newSessionsCLI(t *testing.T) *sessionsCLI { return &sessionsCLI{newCLIWS(t, nil)} }

// ok runs a command that must succeed and returns its stdout.
func (c *sessionsCLI) ok(args ...string) string {
	c.t.Helper()
	code, out, errs := c.runIn("", args...)
	if code != 0 {
		c.t.Fatalf("mcp-host %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// fails runs a command that must exit with code and mention want on stderr.
func (c *sessionsCLI) fails(code int, want string, args ...string) {
	c.t.Helper()
	got, out, errs := c.runIn("", args...)
	if got != code || !strings.Contains(errs, want) {
		c.t.Fatalf("mcp-host %s: exit %d (want %d)\nstdout: %s\nstderr: %s\nwant stderr to mention %q", strings.Join(args, " "), got, code, out, errs, want)
	}
}

func (c *sessionsCLI) writeFile(name, content string) string {
	c.t.Helper()
	p := filepath.Join(c.t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		c.t.Fatal(err)
	}
	return p
}

func TestSessionsCommandsLifecycle(t *testing.T) {
	t.Parallel()
	c := newSessionsCLI(t)
	if out := c.ok("sessions", "create", "ses_cli", "--title", "CLI test"); out != "created session ses_cli\n" {
		t.Fatalf("create: %q", out)
	}
	if out := c.ok("sessions", "create", "ses_cli", "--title", "ignored"); !strings.Contains(out, "already exists") {
		t.Fatalf("second create: %q", out)
	}
	var created struct {
		Session store.Session
		Created bool
	}
	if err := json.Unmarshal([]byte(c.ok("--json", "sessions", "create")), &created); err != nil || !created.Created || !strings.HasPrefix(created.Session.ID, "ses_") {
		t.Fatalf("create --json with a generated id: %+v, %v", created, err)
	}

	if out := c.ok("sessions", "append", "ses_cli", "--text", "Hello there"); !strings.Contains(out, "appended 1 message(s) to ses_cli (#1)") {
		t.Fatalf("append --text: %q", out)
	}
	c.ok("sessions", "append", "ses_cli", "--role", "assistant", "--text", "Hi! Checking.", "--metadata", `{"model":"m1"}`)
	file := c.writeFile("msgs.json", `[
		{"role": "assistant", "parts": [{"type": "tool_call", "id": "t1", "name": "ls", "input": {"dir": "."}}]},
		{"role": "tool", "parts": [{"type": "tool_result", "tool_call_id": "t1", "content": "README.md"}]},
		{"role": "assistant", "text": "There is a README."},
		{"role": "user", "text": "Thanks"}
	]`)
	if out := c.ok("sessions", "append", "ses_cli", "--file", file); !strings.Contains(out, "appended 4 message(s) to ses_cli (#3–#6); it holds 6") {
		t.Fatalf("append --file: %q", out)
	}
	code, out, errs := c.runIn(`{"role":"user","text":"from stdin"}`, "sessions", "append", "ses_cli", "--file", "-")
	if code != 0 || !strings.Contains(out, "(#7)") {
		t.Fatalf("append --file -: %d %q %q", code, out, errs)
	}

	show := c.ok("sessions", "show", "ses_cli")
	for _, want := range []string{`session ses_cli "CLI test" · 7 message(s)`, "#1 user", "  Hello there", "→ tool call ls [t1]", "← tool result [t1] README.md", "#7 user"} {
		if !strings.Contains(show, want) {
			t.Fatalf("show lacks %q:\n%s", want, show)
		}
	}
	var page sessions.MessagePage
	if err := json.Unmarshal([]byte(c.ok("--json", "sessions", "show", "ses_cli", "--limit", "2")), &page); err != nil || len(page.Messages) != 2 || page.NextCursor != "2" {
		t.Fatalf("show --json --limit 2: %+v, %v", page, err)
	}
	if out := c.ok("sessions", "show", "ses_cli", "--limit", "3", "--cursor", "5"); !strings.Contains(out, "#6 user") || !strings.Contains(out, "#7 user") || strings.Contains(out, "#5 ") || strings.Contains(out, "more:") {
		t.Fatalf("show --cursor 5:\n%s", out)
	}

	list := c.ok("sessions", "list")
	if !strings.Contains(list, "ses_cli") || !strings.Contains(list, "CLI test") {
		t.Fatalf("list:\n%s", list)
	}
	var lp sessions.SessionPage
	if err := json.Unmarshal([]byte(c.ok("--json", "sessions")), &lp); err != nil || len(lp.Sessions) != 2 {
		t.Fatalf("sessions --json: %+v, %v", lp, err)
	}

	summary := "# Summary\n\nThe user greeted; the assistant listed the folder (README.md). ✓\n"
	sumFile := c.writeFile("summary.md", summary)
	out = c.ok("sessions", "compact", "ses_cli", "--summary-file", sumFile)
	memPath := filepath.Join(c.ws.MemoryDir(), "ses_cli.md")
	if !strings.Contains(out, "compacted 3 message(s) of ses_cli into a summary; it holds 5 message(s)") || !strings.Contains(out, memPath) {
		t.Fatalf("compact:\n%s", out)
	}
	if got, err := os.ReadFile(memPath); err != nil || string(got) != summary {
		t.Fatalf("memory file: %q, %v", got, err)
	}
	if fi, _ := os.Stat(memPath); fi.Mode().Perm() != 0o600 {
		t.Fatalf("memory file mode %v", fi.Mode())
	}
	show = c.ok("sessions", "show", "ses_cli")
	if !strings.Contains(show, "#3 system") || !strings.Contains(show, "Full summary: "+memPath) || strings.Contains(show, "Hello there") {
		t.Fatalf("show after compact:\n%s", show)
	}
	var res sessions.CompactResult
	if err := json.Unmarshal([]byte(c.ok("--json", "sessions", "compact", "ses_cli", "--summary", "second", "--keep-last", "1")), &res); err != nil || res.Compacted != 4 || res.Session.MessageCount != 2 {
		t.Fatalf("compact --json: %+v, %v", res, err)
	}
	if archives := c.ok("sessions", "archives", "ses_cli"); strings.Count(archives, "succeeded") != 2 {
		t.Fatalf("archives:\n%s", archives)
	}

	md := c.ok("sessions", "export", "ses_cli", "--format", "md")
	if !strings.Contains(md, "# CLI test") || !strings.Contains(md, "## Memory\n\nsecond") || !strings.Contains(md, "· system ·") {
		t.Fatalf("export md:\n%s", md)
	}
	outFile := filepath.Join(t.TempDir(), "export.json")
	c.ok("sessions", "export", "ses_cli", "-o", outFile)
	var doc struct {
		Format   string
		Session  store.Session
		Memory   string
		Messages []store.Message
	}
	if b, err := os.ReadFile(outFile); err != nil || json.Unmarshal(b, &doc) != nil || doc.Memory != "second" || len(doc.Messages) != 2 || doc.Session.ID != "ses_cli" {
		t.Fatalf("export -o: %+v, %v", doc, err)
	}

	if out := c.ok("sessions", "delete", "ses_cli"); out != "deleted session ses_cli\n" {
		t.Fatalf("delete: %q", out)
	}
	if _, err := os.Stat(memPath); !os.IsNotExist(err) {
		t.Fatalf("delete left the memory file: %v", err)
	}
	c.fails(ExitFailure, `no session "ses_cli"`, "sessions", "show", "ses_cli")
	c.fails(ExitFailure, `no session "ses_cli"`, "sessions", "delete", "ses_cli")
}

func TestSessionsCommandsRefuseBadInput(t *testing.T) {
	t.Parallel()
	c := newSessionsCLI(t)
	c.ok("sessions", "create", "ses_ok")
	c.ok("sessions", "append", "ses_ok", "--text", "only message")

	big := c.writeFile("big.json", fmt.Sprintf(`[{"role":"user","text":%q}]`, strings.Repeat("x", 10<<20)))
	cases := []struct {
		name string
		code int
		want string
		args []string
	}{
		{"unknown session", ExitFailure, `no session "ses_nope"`, []string{"sessions", "append", "ses_nope", "--text", "x"}},
		{"unknown role", ExitFailure, `unknown role "narrator"`, []string{"sessions", "append", "ses_ok", "--role", "narrator", "--text", "x"}},
		{"10 MB message", ExitFailure, "the limit is 1 MiB (1048576 bytes) per message", []string{"sessions", "append", "ses_ok", "--text", strings.Repeat("y", 10<<20)}},
		{"10 MB file", ExitFailure, "the limit is 4 MiB (4194304 bytes) per append", []string{"sessions", "append", "ses_ok", "--file", big}},
		{"bad metadata", ExitFailure, "metadata", []string{"sessions", "append", "ses_ok", "--text", "x", "--metadata", "[1]"}},
		{"slash in id", ExitFailure, "invalid session id", []string{"sessions", "create", "a/b"}},
		{"dot-dot id", ExitFailure, "invalid session id", []string{"sessions", "append", "..", "--text", "x"}},
		{"dot-dot inside id", ExitFailure, `must not contain ".."`, []string{"sessions", "create", "a..b"}},
		{"NUL in id", ExitFailure, "invalid session id", []string{"sessions", "create", "a\x00b"}},
		{"no message", ExitUsage, "--text TEXT or --file FILE", []string{"sessions", "append", "ses_ok"}},
		{"no summary", ExitUsage, "exactly one of --summary", []string{"sessions", "compact", "ses_ok"}},
		{"two summaries", ExitUsage, "exactly one of --summary", []string{"sessions", "compact", "ses_ok", "--summary", "a", "--summary-file", "f"}},
		{"nothing to compact", ExitFailure, "nothing to compact", []string{"sessions", "compact", "ses_ok", "--summary", "s"}},
		{"bad format", ExitUsage, "--format", []string{"sessions", "export", "ses_ok", "--format", "pdf"}},
		{"bad cursor", ExitFailure, "cursor", []string{"sessions", "list", "--cursor", "!!"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { c.t = t; c.fails(tc.code, tc.want, tc.args...) })
	}
	c.t = t
	var lp sessions.SessionPage
	if err := json.Unmarshal([]byte(c.ok("--json", "sessions", "list")), &lp); err != nil || len(lp.Sessions) != 1 || lp.Sessions[0].MessageCount != 1 {
		t.Fatalf("after bad input: %+v, %v", lp, err)
	}
	entries, _ := os.ReadDir(c.ws.MemoryDir())
	if len(entries) != 0 {
		t.Fatalf("bad input left %d files in the memory folder", len(entries))
	}
}

func TestSessionsRetentionConfig(t *testing.T) {
	t.Parallel()
	c := newSessionsCLI(t)
	if err := os.MkdirAll(filepath.Join(c.root, ".cairn"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.root, ".cairn", "config.yaml"), []byte("sessions:\n  max_archives: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.ok("sessions", "create", "ses_k")
	compact := func(extra ...string) {
		c.ok("sessions", "append", "ses_k", "--text", "a")
		c.ok("sessions", "append", "ses_k", "--text", "b")
		c.ok(append([]string{"sessions", "compact", "ses_k", "--summary", "s", "--keep-last", "1"}, extra...)...)
	}
	archives := func() int {
		var out struct{ Archives []store.Archive }
		if err := json.Unmarshal([]byte(c.ok("--json", "sessions", "archives", "ses_k")), &out); err != nil {
			t.Fatal(err)
		}
		return len(out.Archives)
	}
	for range 4 {
		compact()
	}
	if n := archives(); n != 2 {
		t.Fatalf("%d archives with sessions.max_archives 2", n)
	}
	for range 2 {
		compact("--max-archives", "0")
	}
	if n := archives(); n != 4 {
		t.Fatalf("%d archives after compactions with --max-archives 0, want 4", n)
	}
	if err := os.WriteFile(filepath.Join(c.root, ".cairn", "config.yaml"), []byte("sessions:\n  max_archives: -1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.fails(ExitFailure, "sessions.max_archives is -1", "sessions", "list")
}

func TestSessionsReadCommandsWriteNothing(t *testing.T) {
	t.Parallel()
	c := newSessionsCLI(t)
	if out := c.ok("sessions", "list"); out != "no sessions\n" {
		t.Fatalf("list on an empty state root: %q", out)
	}
	c.fails(ExitFailure, `no session "ses_x"`, "sessions", "show", "ses_x")
	c.fails(ExitFailure, `no session "ses_x"`, "sessions", "export", "ses_x")
	if out := c.ok("--dry-run", "sessions", "create", "ses_dry"); out != "created session ses_dry\n" {
		t.Fatalf("dry-run create: %q", out)
	}
	// Each dry run starts from an empty memory store.
	c.fails(ExitFailure, `no session "ses_dry"`, "--dry-run", "sessions", "append", "ses_dry", "--text", "x")
	if _, err := os.Stat(c.state); !os.IsNotExist(err) {
		t.Fatalf("read commands or a dry run created the state root: %v", err)
	}
}
