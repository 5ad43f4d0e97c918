package runs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
)

// noFollow makes opening a journal fail on a symlink instead of following it.
const noFollow = syscall.O_NOFOLLOW

// procSpec is one process to run for an exec or shell step.
type procSpec struct {
	argv    []string
	dir     string   // absolute, already checked to be inside the workspace
	env     []string // complete
	timeout time.Duration
	grace   time.Duration // SIGTERM to SIGKILL
	clk     clock.Clock   // times timeout and grace; nil is the wall clock
	cap     int           // bytes of each stream kept
	lineCap int           // bytes of a line handed to onLine
	// onLine gets each line, cut at lineCap with dropped the bytes left
	// out.
	onLine  func(stream, line string, dropped int64)
	onStart func(pid int)
	// Redact are strings (secrets) replaced by "***" in the lines handed
	// to onLine and in the output kept.
	Redact []string
	// dieWithParent: the process gets SIGKILL when its parent (a step
	// supervisor) dies, on Linux.
	dieWithParent bool
}

func (s procSpec) clock() clock.Clock {
	if s.clk == nil {
		return clock.Real{}
	}
	return s.clk
}

// procResult is what became of the process.
type procResult struct {
	PID             int
	ExitCode        *int
	Stdout, Stderr  string
	StdoutTruncated bool
	StderrTruncated bool
	TimedOut        bool
	Interrupted     error // the context's cause when it ended the process
	Err             error // the process could not start, or ended by a signal
	// detached: this process stopped watching the step, which goes on
	// under its supervisor (pid PID).
	detached bool
}

// runProcess runs spec in its own process group and waits for it. When
// ctx ends or the timeout passes, the group gets SIGTERM and, after the
// grace, SIGKILL. When the main process exits, whatever it left running in
// its group is killed.
func runProcess(ctx context.Context, spec procSpec) procResult {
	var res procResult
	path, err := lookPath(spec.argv[0], spec.env, spec.dir)
	if err != nil {
		res.Err = err
		return res
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		res.Err = fmt.Errorf("create pipe: %w", err)
		return res
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		res.Err = fmt.Errorf("create pipe: %w", err)
		return res
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        spec.argv,
		Dir:         spec.dir,
		Env:         spec.env,
		Stdout:      outW, // *os.File: handed to the child as is, no copying goroutine
		Stderr:      errW,
		SysProcAttr: groupAttr(spec.dieWithParent),
	}
	startErr := cmd.Start()
	// Our copies of the write ends must go, or the readers never see EOF.
	outW.Close()
	errW.Close()
	if startErr != nil {
		outR.Close()
		errR.Close()
		res.Err = fmt.Errorf("start %s: %w", spec.argv[0], startErr)
		return res
	}
	pid := cmd.Process.Pid
	res.PID = pid
	if spec.onStart != nil {
		spec.onStart(pid)
	}

	var wg sync.WaitGroup
	stdout := &capture{stream: "stdout", cap: spec.cap, lineCap: spec.lineCap, onLine: spec.onLine, redact: spec.Redact}
	stderr := &capture{stream: "stderr", cap: spec.cap, lineCap: spec.lineCap, onLine: spec.onLine, redact: spec.Redact}
	wg.Add(2)
	go func() { defer wg.Done(); stdout.drain(outR) }()
	go func() { defer wg.Done(); stderr.drain(errR) }()

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var timeout <-chan time.Time
	if spec.timeout > 0 {
		t := spec.clock().NewTimer(spec.timeout)
		defer t.Stop()
		timeout = t.C()
	}
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		select {
		case waitErr = <-waited: // it ended on its own just then
		default:
			res.Interrupted = context.Cause(ctx)
			grace := spec.grace
			if errors.Is(res.Interrupted, errStepLeaseLost) {
				grace = 0 // the step may be another supervisor's now
			}
			waitErr = stopGroup(spec.clock(), pid, grace, waited)
		}
	case <-timeout:
		res.TimedOut = true
		waitErr = stopGroup(spec.clock(), pid, spec.grace, waited)
	}
	// The main process is gone; so must be anything it left in its group
	// (which would otherwise also hold our pipes open).
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	wg.Wait()
	outR.Close()
	errR.Close()

	res.Stdout, res.StdoutTruncated = redact(stdout.kept.String(), spec.Redact), stdout.truncated
	res.Stderr, res.StderrTruncated = redact(stderr.kept.String(), spec.Redact), stderr.truncated
	if ps := cmd.ProcessState; ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Err = fmt.Errorf("killed by signal %s", ws.Signal())
		} else {
			code := ps.ExitCode()
			res.ExitCode = &code
		}
	} else if waitErr != nil {
		res.Err = waitErr
	}
	return res
}

// stopGroup sends SIGTERM to the process group, then SIGKILL after grace,
// and returns the main process's wait error.
func stopGroup(clk clock.Clock, pid int, grace time.Duration, waited <-chan error) error {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	t := clk.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-waited:
		return err
	case <-t.C():
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return <-waited
	}
}

// lookPath finds argv[0] the way a shell would with the step's PATH: a
// name with a slash is taken as is (relative to dir), others are searched
// in PATH.
func lookPath(name string, env []string, dir string) (string, error) {
	if name == "" {
		return "", errors.New("empty program name")
	}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("program %s: %w", name, err)
		}
		return p, nil
	}
	pathVar := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, d := range filepath.SplitList(pathVar) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("program %q not found in PATH (%s)", name, pathVar)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s: %w", p, fs.ErrPermission)
	}
	return nil
}

// capture keeps the first cap bytes of a stream and hands complete lines
// (cut at lineCap) to onLine. It holds at most lineCap bytes of a line.
type capture struct {
	stream    string
	cap       int
	lineCap   int
	onLine    func(stream, line string, dropped int64)
	redact    []string
	kept      bytes.Buffer
	truncated bool
	partial   []byte // the line so far, up to lineCap bytes
	dropped   int64  // bytes of the line past lineCap
}

func (c *capture) drain(r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.add(buf[:n])
		}
		if err != nil {
			break
		}
	}
	if len(c.partial) > 0 || c.dropped > 0 {
		c.endLine()
	}
}

func (c *capture) add(b []byte) {
	if room := c.cap - c.kept.Len(); room > 0 {
		c.kept.Write(b[:min(room, len(b))])
		if len(b) > room {
			c.truncated = true
		}
	} else if len(b) > 0 {
		c.truncated = true
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		room := max(c.lineCap-len(c.partial), 0)
		n := min(room, len(chunk))
		c.partial = append(c.partial, chunk[:n]...)
		c.dropped += int64(len(chunk) - n)
		if i < 0 {
			return
		}
		c.endLine()
		b = b[i+1:]
	}
}

// endLine hands the line so far to onLine.
func (c *capture) endLine() {
	line, dropped := c.partial, c.dropped
	if dropped == 0 {
		line = bytes.TrimSuffix(line, []byte("\r"))
	} else {
		line, dropped = cutLine(line, c.lineCap, dropped)
	}
	if c.onLine != nil {
		c.onLine(c.stream, redact(strings.ToValidUTF8(string(line), "\uFFFD"), c.redact), dropped)
	}
	c.partial, c.dropped = c.partial[:0], 0
}

// redact replaces every occurrence of each of secrets in s by "***".
func redact(s string, secrets []string) string {
	for _, v := range secrets {
		if v != "" && strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, "***")
		}
	}
	return s
}

// workDir resolves a step's dir (slash-separated, relative to the
// workspace root) and refuses one that leaves the workspace, through ".."
// or through a symbolic link.
func workDir(root, dir string) (string, error) {
	if strings.ContainsRune(dir, 0) {
		return "", errors.New("dir: contains a NUL byte")
	}
	if filepath.IsAbs(dir) {
		return "", fmt.Errorf("dir %q: must be relative to the workspace", dir)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("resolve workspace %s: %w", root, err)
	}
	p := filepath.Join(realRoot, filepath.FromSlash(dir))
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("dir %q: %w", dir, err)
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("dir %q leaves the workspace (it resolves to %s)", dir, real)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("dir %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("dir %q is not a directory", dir)
	}
	return real, nil
}
