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
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// versions are the protocol versions the server offers, sorted
// (TestOfferedVersions checks the list against the server).
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

// updates collects notifications/resources/updated by URI, and log
// messages (notifications/message).
type updates struct {
	mu   sync.Mutex
	got  map[string]int
	logs []*mcp.LoggingMessageParams
	wake chan struct{}
}

func newUpdates() *updates {
	return &updates{got: map[string]int{}, wake: make(chan struct{}, 1)}
}

func (u *updates) logHandler(_ context.Context, req *mcp.LoggingMessageRequest) {
	u.mu.Lock()
	u.logs = append(u.logs, req.Params)
	u.mu.Unlock()
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// runLogs are the log messages about run id.
func (u *updates) runLogs(id string) []*mcp.LoggingMessageParams {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []*mcp.LoggingMessageParams
	for _, l := range u.logs {
		if d, ok := l.Data.(map[string]any); ok && d["run_id"] == id {
			out = append(out, l)
		}
	}
	return out
}

// awaitLog waits for a log message about run id with that status.
func (u *updates) awaitLog(t *testing.T, ctx context.Context, id, status string) *mcp.LoggingMessageParams {
	t.Helper()
	for {
		for _, l := range u.runLogs(id) {
			if l.Data.(map[string]any)["status"] == status {
				return l
			}
		}
		select {
		case <-u.wake:
		case <-ctx.Done():
			t.Fatalf("no log message saying run %s is %s; got %v", id, status, u.runLogs(id))
		}
	}
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
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-e2e", Version: "1.0.0"}, &mcp.ClientOptions{ResourceUpdatedHandler: u.handler, LoggingMessageHandler: u.logHandler})
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
				u := newUpdates()
				cs := connect(t, e, transport, version, u)
				if got := cs.InitializeResult().ProtocolVersion; got != version {
					t.Fatalf("negotiated %s, want %s", got, version)
				}
				everyTool(t, cs, u)
				promptsAndCompletions(t, cs)
				runLog(t, cs, u)
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
			cs := connect(t, e, transport, "", newUpdates())
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
		if tool.OutputSchema == nil {
			t.Fatalf("%s has no output schema", tool.Name)
		}
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

// promptsAndCompletions gets the three prompts and completes a target,
// an automation key and a run id.
func promptsAndCompletions(t *testing.T, cs *mcp.ClientSession) {
	ctx := testCtx(t)
	list, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	var names []string
	for _, p := range list.Prompts {
		names = append(names, p.Name)
	}
	if strings.Join(names, " ") != "run schedule status" {
		t.Fatalf("prompts/list: %v, want run schedule status", names)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_automation", Arguments: map[string]any{"key": "weekly", "target": "noop", "cron": "0 3 * * 1", "tz": "UTC"}}); err != nil {
		t.Fatal(err)
	}
	prompts := []struct {
		name string
		args map[string]string
		want []string
	}{
		{"run", map[string]string{"target": "hello", "input": `{"who":"go"}`}, []string{"launch_run", `"hello"`, `{"who":"go"}`}},
		{"schedule", map[string]string{"target": "noop", "when": "every monday at 3", "key": "weekly"}, []string{"create_automation", "every monday at 3", "weekly"}},
		{"status", nil, []string{"running runs", "waiting runs"}},
	}
	for _, pc := range prompts {
		p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: pc.name, Arguments: pc.args})
		if err != nil || len(p.Messages) != 1 || p.Messages[0].Role != "user" {
			t.Fatalf("prompts/get %s: %v %v", pc.name, p, err)
		}
		tc, ok := p.Messages[0].Content.(*mcp.TextContent)
		if !ok {
			t.Fatalf("prompt %s: %#v", pc.name, p.Messages[0].Content)
		}
		for _, w := range pc.want {
			if !strings.Contains(tc.Text, w) {
				t.Errorf("prompt %s: %q lacks %q", pc.name, tc.Text, w)
			}
		}
	}
	completions := []struct {
		ref        *mcp.CompleteReference
		arg, value string
		want       string
	}{
		{&mcp.CompleteReference{Type: "ref/prompt", Name: "run"}, "target", "he", "hello"},
		{&mcp.CompleteReference{Type: "ref/prompt", Name: "schedule"}, "key", "we", "weekly"},
		{&mcp.CompleteReference{Type: "ref/resource", URI: "cairn://runs/{run_id}"}, "run_id", "run_", ""},
	}
	for _, cc := range completions {
		c, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: cc.ref, Argument: mcp.CompleteParamsArgument{Name: cc.arg, Value: cc.value}})
		switch {
		case err != nil:
			t.Errorf("complete %s %q: %v", cc.arg, cc.value, err)
		case cc.want != "" && (len(c.Completion.Values) != 1 || c.Completion.Values[0] != cc.want):
			t.Errorf("complete %s %q: %v, want [%s]", cc.arg, cc.value, c.Completion.Values, cc.want)
		case len(c.Completion.Values) == 0:
			t.Errorf("complete %s %q: no values", cc.arg, cc.value)
		}
	}
}

// runLog checks the run lifecycle log messages: at level info a run's
// success is told (logger cairn.runs); at warning it is not, while a
// cancellation (a warning) is.
func runLog(t *testing.T, cs *mcp.ClientSession, u *updates) {
	ctx := testCtx(t)
	launch := func(target string, wait int) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "launch_run", Arguments: map[string]any{"target": target, "wait_seconds": wait}})
		if err != nil || res.IsError {
			t.Fatalf("launch_run %s: %v %v", target, err, res)
		}
		return res.StructuredContent.(map[string]any)["id"].(string)
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatalf("logging/setLevel info: %v", err)
	}
	loud := launch("hello", 30)
	if l := u.awaitLog(t, ctx, loud, "succeeded"); l.Level != "info" || l.Logger != "cairn.runs" {
		t.Errorf("success logged as %+v, want level info, logger cairn.runs", l)
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatalf("logging/setLevel warning: %v", err)
	}
	quiet := launch("hello", 30)
	slow := launch("slow", 0)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "cancel_run", Arguments: map[string]any{"run_id": slow}}); err != nil {
		t.Fatal(err)
	}
	// The messages leave in the order the runs changed: once the
	// cancellation is told, the quiet run's success would have been.
	if l := u.awaitLog(t, ctx, slow, "cancelled"); l.Level != "warning" {
		t.Errorf("cancellation logged as %+v, want level warning", l)
	}
	if got := u.runLogs(quiet); len(got) != 0 {
		t.Errorf("at level warning the run %s was logged: %+v", quiet, got[0])
	}
}

// rawAnswer is a JSON-RPC answer as the tests read it.
type rawAnswer struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result struct {
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"result"`
	Error *struct {
		Code int `json:"code"`
		Data struct {
			Supported []string `json:"supported"`
		} `json:"data"`
	} `json:"error"`
}

// checkSupported fails unless an UNSUPPORTED_PROTOCOL_VERSION error lists
// exactly the versions this test exercises.
func checkSupported(t *testing.T, what string, a rawAnswer) {
	t.Helper()
	if a.Error == nil || a.Error.Code != -32022 {
		t.Errorf("%s: %+v, want error -32022 (unsupported protocol version)", what, a)
		return
	}
	got := append([]string(nil), a.Error.Data.Supported...)
	slices.Sort(got)
	if !slices.Equal(got, versions) {
		t.Errorf("%s: the server offers %v; this test exercises %v (add the new one to versions)", what, got, versions)
	}
}

const (
	initAt   = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	modernAt = `{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
)

// TestOfferedVersions checks, on both transports of the real binary, which
// versions are offered: exactly those TestGoSDK runs at. 2026-07-28 is not
// offered: initialize asking for it negotiates 2025-11-25, its stateless
// requests (server/discover, subscriptions/listen) are refused with the
// versions served, and so is its MCP-Protocol-Version header over HTTP.
func TestOfferedVersions(t *testing.T) {
	t.Parallel()
	newest := versions[len(versions)-1]
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		cmd := e.command("serve")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close(); cmd.Wait() })
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		ask := func(line string) rawAnswer {
			t.Helper()
			if _, err := io.WriteString(stdin, line+"\n"); err != nil {
				t.Fatal(err)
			}
			for sc.Scan() {
				var a rawAnswer
				if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
					t.Fatalf("%s: %v", sc.Bytes(), err)
				}
				if a.Method == "" {
					return a
				}
			}
			t.Fatalf("%s: serve ended without an answer (%v)", line, sc.Err())
			return rawAnswer{}
		}
		if a := ask(initAt); a.Result.ProtocolVersion != newest {
			t.Errorf("initialize at 2026-07-28: %+v, want %s", a, newest)
		}
		if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
			t.Fatal(err)
		}
		for i, method := range []string{"server/discover", "subscriptions/listen", "tools/list"} {
			checkSupported(t, method+" at 2026-07-28", ask(fmt.Sprintf(modernAt, i+2, method)))
		}
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		url, token := serveHTTP(t, e)
		post := func(body string, headers ...string) (*http.Response, rawAnswer) {
			t.Helper()
			req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+token)
			for i := 0; i+1 < len(headers); i += 2 {
				req.Header.Set(headers[i], headers[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if i := strings.LastIndex(string(b), "data: "); strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && i >= 0 {
				b = []byte(strings.TrimSpace(string(b[i+len("data: "):])))
			}
			var a rawAnswer
			if len(b) > 0 && json.Unmarshal(b, &a) != nil {
				t.Fatalf("%s: %d %s", body, resp.StatusCode, b)
			}
			return resp, a
		}
		resp, a := post(initAt)
		sid := resp.Header.Get("Mcp-Session-Id")
		if a.Result.ProtocolVersion != newest || sid == "" {
			t.Fatalf("initialize at 2026-07-28: %d %+v (session %q), want %s", resp.StatusCode, a, sid, newest)
		}
		post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", newest)
		resp, a = post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2026-07-28")
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("MCP-Protocol-Version 2026-07-28: %d, want 400", resp.StatusCode)
		}
		checkSupported(t, "MCP-Protocol-Version 2026-07-28", a)
		for i, method := range []string{"server/discover", "subscriptions/listen"} {
			_, a := post(fmt.Sprintf(modernAt, i+3, method), "Mcp-Session-Id", sid, "Mcp-Protocol-Version", newest)
			checkSupported(t, method+" at 2026-07-28", a)
		}
	})
}
