package gosdk

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// versions are the protocol versions the server offers.
var versions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

var bin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	bin = os.Getenv("MCP_HOST_BIN")
	if bin == "" {
		dir, err := os.MkdirTemp("", "cairn-gosdk-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "mcp-host")
		build := exec.Command("go", "build", "-o", bin, "./cmd/mcp-host")
		build.Dir = "../.."
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build mcp-host:", err)
			return 1
		}
	}
	return m.Run()
}

// env is a workspace with the test workflows and its own state root.
type env struct {
	root, state, home string
}

func newEnv(t *testing.T) *env {
	dir := t.TempDir()
	e := &env{root: filepath.Join(dir, "ws"), state: filepath.Join(dir, "state"), home: dir}
	wf := filepath.Join(e.root, ".cairn", "workflows")
	if err := os.MkdirAll(wf, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(wf, os.DirFS("../../mcp/e2e/testdata/workflows")); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) command(args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Dir = e.root
	cmd.Env = append(os.Environ(), "CAIRN_STATE="+e.state, "HOME="+e.home)
	return cmd
}

// updates collects notifications/resources/updated by URI.
type updates struct {
	mu   sync.Mutex
	got  map[string]int
	wake chan struct{}
}

func (u *updates) handler(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	u.mu.Lock()
	u.got[req.Params.URI]++
	u.mu.Unlock()
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

func (u *updates) count(uri string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.got[uri]
}

// connect starts serve on transport ("stdio" or "http") and connects a
// Go SDK client asking for version ("" for the SDK's default).
func connect(t *testing.T, e *env, transport, version string, u *updates) *mcp.ClientSession {
	ctx := testCtx(t)
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-e2e", Version: "1.0.0"}, &mcp.ClientOptions{ResourceUpdatedHandler: u.handler})
	var tr mcp.Transport
	switch transport {
	case "stdio":
		tr = &mcp.CommandTransport{Command: e.command("serve")}
	case "http":
		url, token := serveHTTP(t, e)
		tr = &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}}
	}
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect over %s at %q: %v", transport, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

var (
	servingRe = regexp.MustCompile(`serving MCP at (http://127\.0\.0\.1:\d+/mcp)`)
	tokenRe   = regexp.MustCompile(`Authorization: Bearer ([0-9a-f]+)`)
)

// serveHTTP starts serve --http, which makes a token and prints it.
func serveHTTP(t *testing.T, e *env) (url, token string) {
	cmd := e.command("serve", "--http", "127.0.0.1:0")
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); pw.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	sc := bufio.NewScanner(pr)
	for (url == "" || token == "") && sc.Scan() {
		if m := servingRe.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
		if m := tokenRe.FindStringSubmatch(sc.Text()); m != nil {
			token = m[1]
		}
	}
	go io.Copy(io.Discard, pr)
	if url == "" || token == "" {
		t.Fatal("serve --http did not print its address and token")
	}
	return url, token
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestGoSDK runs every tool over both transports at every offered
// version, checking each structuredContent against the tool's output
// schema and that a subscription delivers updates.
func TestGoSDK(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		for _, version := range versions {
			t.Run(transport+"/"+version, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				u := &updates{got: map[string]int{}, wake: make(chan struct{}, 1)}
				cs := connect(t, e, transport, version, u)
				if got := cs.InitializeResult().ProtocolVersion; got != version {
					t.Fatalf("negotiated %s, want %s", got, version)
				}
				everyTool(t, cs, u)
				promptsAndCompletions(t, cs)
			})
		}
	}
}

// TestGoSDKDefaultVersion connects as the SDK does by default (it tries
// 2026-07-28 first): the server negotiates down to what it offers.
func TestGoSDKDefaultVersion(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cs := connect(t, e, transport, "", &updates{got: map[string]int{}, wake: make(chan struct{}, 1)})
			if got := cs.InitializeResult().ProtocolVersion; got != versions[len(versions)-1] {
				t.Errorf("negotiated %s, want %s", got, versions[len(versions)-1])
			}
			if _, err := cs.ListTools(testCtx(t), nil); err != nil {
				t.Errorf("tools/list: %v", err)
			}
		})
	}
}

// toolbox calls tools and checks their results against their schemas.
type toolbox struct {
	t       *testing.T
	cs      *mcp.ClientSession
	schemas map[string]*jsonschema.Resolved
	called  map[string]bool
}

func (tb *toolbox) ok(name string, args map[string]any, out any) {
	tb.t.Helper()
	res, err := tb.cs.CallTool(testCtx(tb.t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		tb.t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		tb.t.Fatalf("%s(%v): isError: %v", name, args, res.Content)
	}
	tb.called[name] = true
	b, err := json.Marshal(res.StructuredContent)
	if err != nil || res.StructuredContent == nil {
		tb.t.Fatalf("%s: no structuredContent (%v)", name, err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		tb.t.Fatal(err)
	}
	if err := tb.schemas[name].Validate(v); err != nil {
		tb.t.Errorf("%s: structuredContent does not match the output schema: %v\n%s", name, err, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			tb.t.Fatalf("%s: decode: %v", name, err)
		}
	}
}

type runRec struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Result   any    `json:"result"`
	Question any    `json:"question"`
}

func everyTool(t *testing.T, cs *mcp.ClientSession, u *updates) {
	ctx := testCtx(t)
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tb := &toolbox{t: t, cs: cs, schemas: map[string]*jsonschema.Resolved{}, called: map[string]bool{}}
	for _, tool := range list.Tools {
		b, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: output schema: %v", tool.Name, err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: resolve output schema: %v", tool.Name, err)
		}
		tb.schemas[tool.Name] = r
	}

	tb.ok("list_targets", nil, nil)
	var r runRec
	tb.ok("launch_run", map[string]any{"target": "hello", "input": map[string]any{"who": "go"}, "wait_seconds": 30}, &r)
	if r.Status != "succeeded" {
		t.Fatalf("launch_run: %+v", r)
	}
	tb.ok("get_run", map[string]any{"run_id": r.ID}, nil)
	tb.ok("list_runs", map[string]any{"target": "hello"}, nil)
	tb.ok("read_run_output", map[string]any{"run_id": r.ID, "limit": 1000}, nil)

	var parked runRec
	tb.ok("launch_run", map[string]any{"target": "confirm", "wait_seconds": 30}, &parked)
	if parked.Status != "waiting" {
		t.Fatalf("confirm: %+v", parked)
	}
	uri := "cairn://runs/" + parked.ID
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	tb.ok("answer_run", map[string]any{"run_id": parked.ID, "answer": "yes"}, nil)
	for u.count(uri) == 0 {
		select {
		case <-u.wake:
		case <-ctx.Done():
			t.Fatalf("no notifications/resources/updated for %s", uri)
		}
	}

	var slow runRec
	tb.ok("launch_run", map[string]any{"target": "slow"}, &slow)
	tb.ok("cancel_run", map[string]any{"run_id": slow.ID}, nil)

	var created struct {
		Automation struct {
			ID string `json:"id"`
		} `json:"automation"`
	}
	tb.ok("create_automation", map[string]any{"key": "nightly", "target": "noop", "cron": "0 3 * * *", "tz": "UTC"}, &created)
	tb.ok("list_automations", nil, nil)
	tb.ok("update_automation", map[string]any{"id": created.Automation.ID, "note": "tested"}, nil)
	tb.ok("trigger_automation", map[string]any{"id": created.Automation.ID}, nil)
	tb.ok("delete_automation", map[string]any{"id": created.Automation.ID}, nil)

	tb.ok("create_session", map[string]any{"session_id": "chat", "title": "Go SDK"}, nil)
	var msgs []any
	for i := range 3 {
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("turn %d", i)})
	}
	tb.ok("append_session_messages", map[string]any{"session_id": "chat", "messages": msgs}, nil)
	tb.ok("get_session", map[string]any{"session_id": "chat"}, nil)
	tb.ok("list_sessions", nil, nil)
	tb.ok("compact_session", map[string]any{"session_id": "chat", "summary": "three turns", "keep_last": 1}, nil)
	tb.ok("delete_session", map[string]any{"session_id": "chat"}, nil)

	for _, tool := range list.Tools {
		if !tb.called[tool.Name] {
			t.Errorf("%s was not called", tool.Name)
		}
	}
	// Wait for every run (the cancelled one, the automation's fire) to
	// settle, so serve exits without handing work to a background worker.
	for {
		var page struct {
			Runs []runRec `json:"runs"`
		}
		tb.ok("list_runs", nil, &page)
		busy := 0
		for _, r := range page.Runs {
			if r.Status != "succeeded" && r.Status != "failed" && r.Status != "cancelled" {
				busy++
			}
		}
		if busy == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("runs did not settle: %+v", page.Runs)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// promptsAndCompletions gets the run prompt and completes a target and a
// run id.
func promptsAndCompletions(t *testing.T, cs *mcp.ClientSession) {
	ctx := testCtx(t)
	list, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(list.Prompts) != 3 {
		t.Fatalf("prompts/list: %v %v", list, err)
	}
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "run", Arguments: map[string]string{"target": "hello"}})
	if err != nil || len(p.Messages) != 1 {
		t.Fatalf("prompts/get run: %v %v", p, err)
	}
	if tc, ok := p.Messages[0].Content.(*mcp.TextContent); !ok || !strings.Contains(tc.Text, "launch_run") {
		t.Errorf("run prompt: %#v", p.Messages[0].Content)
	}
	c, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "run"}, Argument: mcp.CompleteParamsArgument{Name: "target", Value: "he"}})
	if err != nil || len(c.Completion.Values) != 1 || c.Completion.Values[0] != "hello" {
		t.Errorf("complete target: %v %v", c, err)
	}
	c, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "cairn://runs/{run_id}"}, Argument: mcp.CompleteParamsArgument{Name: "run_id", Value: "run_"}})
	if err != nil || len(c.Completion.Values) == 0 {
		t.Errorf("complete run_id: %v %v", c, err)
	}
}
