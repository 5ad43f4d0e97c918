// Package e2e tests `mcp-host serve` end to end: the real binary, built
// once for the package, speaking MCP over stdio to a raw line client
// (mcptest) that sees every byte it writes.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cairnhq/cairn/internal/syncbuf"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/mcp/mcptest"
	"github.com/cairnhq/cairn/workspace"
)

// bin is the mcp-host binary under test.
var bin string

func TestMain(m *testing.M) {
	os.Exit(mainRun(m))
}

func mainRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cairn-mcp-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = os.Getenv("MCP_HOST_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "mcp-host")
		build := exec.Command("go", "build", "-o", bin, "github.com/cairnhq/cairn/cmd/mcp-host")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build mcp-host:", err)
			return 1
		}
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}

// workflowsDir holds the workflows every test workspace holds. The
// TypeScript tests (e2e/test) load some of them too.
const workflowsDir = "testdata/workflows"

// workflowCount is how many workflows a test workspace holds.
func workflowCount(t testing.TB) int {
	t.Helper()
	entries, err := os.ReadDir(workflowsDir)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// env is a workspace and state root in a temporary folder.
type env struct {
	t     testing.TB
	root  string // workspace
	state string
	home  string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, root: filepath.Join(dir, "ws"), state: filepath.Join(dir, "state"), home: dir}
	t.Cleanup(e.stopWorkers)
	wf := filepath.Join(e.root, ".cairn", "workflows")
	if err := os.MkdirAll(wf, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(wf, os.DirFS(workflowsDir)); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) environ() []string {
	return append(os.Environ(), "CAIRN_STATE="+e.state, "HOME="+e.home)
}

// stopWorkers stops the background workers serve or the CLI started for
// this state root (they would otherwise idle a minute before exiting).
func (e *env) stopWorkers() {
	cmd := exec.Command(bin, "--json", "status")
	cmd.Dir, cmd.Env = e.root, e.environ()
	out, err := cmd.Output()
	if err != nil {
		return
	}
	var st struct {
		Workspaces []struct {
			Worker struct {
				PID int `json:"pid"`
			} `json:"worker"`
		} `json:"workspaces"`
	}
	if json.Unmarshal([]byte(out), &st) != nil {
		return
	}
	for _, w := range st.Workspaces {
		if w.Worker.PID <= 0 {
			continue
		}
		_ = syscall.Kill(w.Worker.PID, syscall.SIGTERM)
	}
	ws, err := workspace.Resolve(e.root, "", e.state)
	if err != nil {
		return
	}
	for range 200 { // up to 10 s: a worker stops its runs first
		if _, held, err := locks.Describe(ws.LocksDir(), "worker"); err != nil || !held {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// command runs mcp-host with args in the workspace and returns its output.
func (e *env) command(args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = e.root, e.environ()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// server is a running `mcp-host serve` with a client on its stdio.
type server struct {
	t      testing.TB
	cmd    *exec.Cmd
	client *mcptest.Client
	stdin  io.WriteCloser
	stderr *syncbuf.Buffer
	done   chan error
}

// serve starts `mcp-host serve` and initializes a session.
func (e *env) serve(clientName string, extra ...string) *server {
	e.t.Helper()
	cmd := exec.Command(bin, append([]string{"serve"}, extra...)...)
	cmd.Dir, cmd.Env = e.root, e.environ()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	s := &server{t: e.t, cmd: cmd, stdin: stdin, stderr: &syncbuf.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	s.client = mcptest.New(stdout, stdin)
	go func() { s.done <- cmd.Wait() }()
	e.t.Cleanup(func() {
		stdin.Close()
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-s.done
			e.t.Errorf("serve did not exit after stdin closed; stderr:\n%s", s.stderr.String())
		}
		if e.t.Failed() {
			e.t.Logf("serve stderr:\n%s", s.stderr.String())
		}
	})
	if _, err := s.client.Initialize(ctx(e.t), clientName); err != nil {
		e.t.Fatalf("initialize: %v\nstderr: %s", err, s.stderr.String())
	}
	return s
}

// ctx bounds one step of a test: it only turns a hang into a failure.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return c
}

// until polls cond (a bounded loop that turns a hang into a failure).
func until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
