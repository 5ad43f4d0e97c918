package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// protocolVersion is the last MCP revision with the initialize handshake.
const protocolVersion = "2025-11-25"

// host is one mcp-host process started by the harness.
type host struct {
	cmd     *exec.Cmd
	started time.Time
	in      io.WriteCloser
	out     *bufio.Reader
	stderr  *capBuffer
	nextID  int
	exited  chan struct{} // closed once the process was reaped
	waitErr error         // valid after exited is closed
}

// hostParams says how to start mcp-host.
type hostParams struct {
	Bin       string
	Args      []string // e.g. "serve"
	StateRoot string   // --state
	Workspace string   // the working directory (holding .cairn/)
	Stdio     bool     // connect stdin/stdout pipes (for serve)
}

// startHost starts mcp-host; its stderr is kept for error messages.
func startHost(p hostParams) (*host, error) {
	args := append([]string{"--state", p.StateRoot}, p.Args...)
	cmd := exec.Command(p.Bin, args...)
	cmd.Dir = p.Workspace
	cmd.Env = append(os.Environ(), "CAIRN_STATE="+p.StateRoot)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	h := &host{cmd: cmd, stderr: &capBuffer{max: 64 << 10}, exited: make(chan struct{})}
	cmd.Stderr = h.stderr
	if p.Stdio {
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		h.in, h.out = in, bufio.NewReaderSize(out, 1<<20)
	}
	h.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s %s: %w", p.Bin, strings.Join(p.Args, " "), err)
	}
	go func() {
		h.waitErr = cmd.Wait()
		close(h.exited)
	}()
	return h, nil
}

// rpcError is a JSON-RPC error response.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// call sends a request and returns its result, skipping notifications and
// server requests that arrive before the response.
func (h *host) call(method string, params any) (json.RawMessage, error) {
	h.nextID++
	id := h.nextID
	if err := h.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	for {
		line, err := h.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("read response to %s: %w%s", method, err, h.stderrTail())
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *rpcError       `json:"error"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			return nil, fmt.Errorf("decode message from mcp-host: %w: %q", err, truncate(string(line), 200))
		}
		if msg.Method != "" || len(msg.ID) == 0 {
			continue // a notification or a request from the server
		}
		if string(msg.ID) != fmt.Sprint(id) {
			return nil, fmt.Errorf("response to id %s while waiting for %d", msg.ID, id)
		}
		if msg.Error != nil {
			return nil, fmt.Errorf("%s: %w", method, msg.Error)
		}
		return msg.Result, nil
	}
}

func (h *host) notify(method string, params any) error {
	return h.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

func (h *host) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := h.in.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write to mcp-host: %w%s", err, h.stderrTail())
	}
	return nil
}

// initialize does the MCP handshake.
func (h *host) initialize() error {
	_, err := h.call("initialize", map[string]any{
		"protocolVersion": protocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "cairn-bench", "version": "1"},
	})
	if err != nil {
		return err
	}
	return h.notify("notifications/initialized", map[string]any{})
}

// toolResult is the part of a tools/call result the harness reads.
type toolResult struct {
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Content           []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// callTool calls a tool and fails on a tool error.
func (h *host) callTool(name string, args any) (*toolResult, error) {
	raw, err := h.call("tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return nil, err
	}
	var res toolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decode %s result: %w", name, err)
	}
	if res.IsError {
		var texts []string
		for _, c := range res.Content {
			texts = append(texts, c.Text)
		}
		return &res, fmt.Errorf("%s: tool error: %s", name, strings.Join(texts, " "))
	}
	return &res, nil
}

// stop closes stdin (a serve ends on EOF), then waits; a process still up
// after the grace gets SIGTERM, then SIGKILL. It may be called again.
func (h *host) stop(grace time.Duration) error {
	if h.in != nil {
		h.in.Close()
	}
	select {
	case <-h.exited:
		return exitErr(h.waitErr)
	case <-time.After(grace):
	}
	syscall.Kill(-h.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-h.exited:
		return exitErr(h.waitErr)
	case <-time.After(5 * time.Second):
	}
	syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	<-h.exited
	return exitErr(h.waitErr)
}

// kill SIGKILLs the process (not its group: its children are the test's
// business) and waits for it. It may be called again.
func (h *host) kill() {
	select {
	case <-h.exited:
		return
	default:
	}
	h.cmd.Process.Signal(syscall.SIGKILL)
	<-h.exited
}

func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
		return nil // stopped by the harness
	}
	return err
}

func (h *host) stderrTail() string {
	s := strings.TrimSpace(h.stderr.String())
	if s == "" {
		return ""
	}
	return "; mcp-host stderr: " + truncate(s, 2000)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// capBuffer keeps the last max bytes written to it.
type capBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if over := c.buf.Len() - c.max; over > 0 {
		c.buf.Next(over)
	}
	return len(p), nil
}

func (c *capBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// procStatus reads the kB fields (VmRSS, VmHWM) of /proc/<pid>/status, in MB.
func procStatus(pid int) (map[string]float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	m := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var kb float64
		if _, err := fmt.Sscanf(strings.TrimSpace(v), "%f kB", &kb); err == nil {
			m[k] = kb * 1024 / 1e6 // MB (10^6 bytes): the stricter reading of the goals
		}
	}
	return m, nil
}

// waitFor polls cond every interval until it is true, ctx ends or timeout
// passes.
func waitFor(ctx context.Context, timeout, interval time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}
