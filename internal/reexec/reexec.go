// Package reexec runs a test binary again as a child process, for tests
// that need several real processes (locks, crashes, SIGKILL). The child's
// TestMain sees an environment variable the parent set and plays its role
// instead of running the tests.
package reexec

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Params describe a child.
type Params struct {
	// Env is added to the parent's environment; it names the role.
	Env []string
	// Args are the child's arguments.
	Args []string
	// Stderr receives the child's standard error; nil: the parent's.
	Stderr io.Writer
	// Adjust, when set, changes the command before it starts.
	Adjust func(*exec.Cmd)
}

// Child is a running child process; Stdin and Stdout are pipes to it.
type Child struct {
	Cmd    *exec.Cmd
	Stdin  io.WriteCloser
	Stdout *bufio.Reader
}

// Start starts this test binary as a child. Under -race a process sleeps a
// second at exit unless told not to, so Start tells it not to. The child
// is killed and waited for when the test ends, whatever happened.
func Start(t testing.TB, p Params) *Child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, p.Args...)
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(append(os.Environ(), "GORACE="+gorace), p.Env...)
	cmd.Stderr = p.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.Adjust != nil {
		p.Adjust(cmd)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return &Child{Cmd: cmd, Stdin: stdin, Stdout: bufio.NewReader(stdout)}
}

// Line reads the child's next line of output, without its newline. It
// fails the test when the child ends first.
func (c *Child) Line(t testing.TB) string {
	t.Helper()
	line, err := c.Stdout.ReadString('\n')
	if err != nil {
		t.Fatalf("child %d: read its output: %v (after %q)", c.Cmd.Process.Pid, err, line)
	}
	return strings.TrimSuffix(line, "\n")
}

// Say writes a line to the child's standard input.
func (c *Child) Say(t testing.TB, line string) {
	t.Helper()
	if _, err := io.WriteString(c.Stdin, line+"\n"); err != nil {
		t.Fatalf("child %d: write %q: %v", c.Cmd.Process.Pid, line, err)
	}
}
