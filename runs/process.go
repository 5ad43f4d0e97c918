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

// envAllowlist are the variables a step inherits from the engine's
// environment; everything else comes from the step's env.
var envAllowlist = []string{"PATH", "HOME", "LANG", "TZ"}

// procSpec is one process to run for an exec or shell step.
type procSpec struct {
	argv    []string
	dir     string   // absolute, already checked to be inside the workspace
	env     []string // complete
	timeout time.Duration
	grace   time.Duration // SIGTERM to SIGKILL
	clk     clock.Clock   // times timeout and grace; nil is the wall clock
	cap     int           // bytes of each stream kept
	onLine  func(stream, line string)
	onStart func(pid int)
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
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
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
	stdout := &capture{stream: "stdout", cap: spec.cap, onLine: spec.onLine}
	stderr := &capture{stream: "stderr", cap: spec.cap, onLine: spec.onLine}
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
			waitErr = stopGroup(spec.clock(), pid, spec.grace, waited)
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

	res.Stdout, res.StdoutTruncated = stdout.kept.String(), stdout.truncated
	res.Stderr, res.StderrTruncated = stderr.kept.String(), stderr.truncated
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
// (split at maxLine) to onLine.
type capture struct {
	stream    string
	cap       int
	onLine    func(stream, line string)
	kept      bytes.Buffer
	truncated bool
	partial   []byte
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
	if len(c.partial) > 0 {
		c.emit(c.partial)
		c.partial = nil
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
	c.partial = append(c.partial, b...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		c.emit(c.partial[:i])
		c.partial = c.partial[i+1:]
	}
	for len(c.partial) >= maxLine {
		c.emit(c.partial[:maxLine])
		c.partial = c.partial[maxLine:]
	}
	c.partial = bytes.Clone(c.partial)
}

func (c *capture) emit(line []byte) {
	if c.onLine != nil {
		c.onLine(c.stream, strings.ToValidUTF8(strings.TrimSuffix(string(line), "\r"), "\uFFFD"))
	}
}

// stepEnv builds a step's environment: the allowlisted variables of this
// process, then the step's own.
func stepEnv(extra map[string]string) []string {
	vars := map[string]string{}
	for _, k := range envAllowlist {
		if v, ok := os.LookupEnv(k); ok {
			vars[k] = v
		}
	}
	if _, ok := vars["PATH"]; !ok {
		vars["PATH"] = "/usr/local/bin:/usr/bin:/bin"
	}
	for k, v := range extra {
		vars[k] = v
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
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
