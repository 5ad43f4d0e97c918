package locks

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/reexec"
)

// childEnv, when set, makes the test binary play a child role instead of
// running tests: the arguments are "<role> <args...>".
const childEnv = "CAIRN_LOCKS_CHILD"

func TestMain(m *testing.M) {
	reexec.Main(m, childEnv, func(string) int { return runChild(os.Args[1:]) })
}

// runChild plays one role in a multi-process test:
//
//	hold <dir> <name>     take the lock, print "locked", hold it until stdin closes
//	holdkey <dir> <table> <key>
//	                      the same with a key of a lock table
//	contend <dir> <name> <file> <n>
//	                      print "ready", wait for a line on stdin, then n times:
//	                      Acquire, append "begin <pid>" and "end <pid>" to file
//	fds                   print the target of every open descriptor, one a line
func runChild(args []string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	if len(args) == 0 {
		return fail(fmt.Errorf("no role"))
	}
	switch role := args[0]; {
	case role == "hold" && len(args) == 3:
		l, err := TryLock(args[1], args[2])
		if err != nil {
			return fail(err)
		}
		if err := holdUntilEOF(l); err != nil {
			return fail(err)
		}
		return 0
	case role == "holdkey" && len(args) == 4:
		t, err := OpenTable(args[1], args[2])
		if err != nil {
			return fail(err)
		}
		l, err := t.TryLock(args[3])
		if err != nil {
			return fail(err)
		}
		if err := holdUntilEOF(l); err != nil {
			return fail(err)
		}
		return 0
	case role == "contend" && len(args) == 5:
		n, err := strconv.Atoi(args[4])
		if err != nil {
			return fail(err)
		}
		if err := contend(args[1], args[2], args[3], n); err != nil {
			return fail(err)
		}
		return 0
	case role == "fds" && len(args) == 1:
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return fail(err)
		}
		for _, e := range entries {
			if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil {
				fmt.Println(target)
			}
		}
		return 0
	default:
		return fail(fmt.Errorf("bad child arguments %q", args))
	}
}

// holdUntilEOF says "locked" and holds l until stdin closes.
func holdUntilEOF(l interface{ Unlock() error }) error {
	fmt.Println("locked")
	_, _ = bufio.NewReader(os.Stdin).ReadString(0) // until EOF
	return l.Unlock()
}

func contend(dir, name, file string, n int) error {
	out, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer out.Close()
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("wait for start: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pid := os.Getpid()
	for range n {
		l, err := Acquire(ctx, dir, name)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(out, "begin %d\n", pid); err != nil {
			return err
		}
		time.Sleep(rand.N(500 * time.Microsecond))
		if _, err := fmt.Fprintf(out, "end %d\n", pid); err != nil {
			return err
		}
		if err := l.Unlock(); err != nil {
			return err
		}
		// Pause outside so that the others, polling, get their turns
		// instead of this process taking the lock straight back.
		time.Sleep(rand.N(10 * time.Millisecond))
	}
	return nil
}

// child is a running child role.
type child struct {
	cmd    *exec.Cmd
	stdin  interface{ Close() error }
	stdout *bufio.Reader
	write  func(string) error
}

// startChild starts the test binary in a child role. The child is killed
// and waited for when the test ends, whatever happened.
func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	return startChildWith(t, nil, args...)
}

// startChildWith is startChild with a chance to adjust the command first.
func startChildWith(t *testing.T, adjust func(*exec.Cmd), args ...string) *child {
	t.Helper()
	c := reexec.Start(t, reexec.Params{Env: []string{childEnv + "=1"}, Args: args, Adjust: adjust})
	return &child{
		cmd:    c.Cmd,
		stdin:  c.Stdin,
		stdout: c.Stdout,
		write: func(s string) error {
			_, err := io.WriteString(c.Stdin, s)
			return err
		},
	}
}

// expect reads the child's next line of output and fails unless it is want.
func (c *child) expect(t *testing.T, want string) {
	t.Helper()
	line, err := c.stdout.ReadString('\n')
	if got := strings.TrimSuffix(line, "\n"); err != nil || got != want {
		t.Fatalf("child %d said %q (%v), want %q", c.cmd.Process.Pid, line, err, want)
	}
}

// wait closes the child's stdin and waits for it to exit successfully.
func (c *child) wait(t *testing.T) {
	t.Helper()
	_ = c.stdin.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child %d: %v", c.cmd.Process.Pid, err)
	}
}

// holdInChild starts a child holding the lock name in dir and returns once
// it holds it.
func holdInChild(t *testing.T, dir, name string) *child {
	t.Helper()
	c := startChild(t, "hold", dir, name)
	c.expect(t, "locked")
	return c
}
