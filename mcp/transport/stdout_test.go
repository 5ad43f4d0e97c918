//go:build unix

package transport

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// TestRedirectStdout re-executes the test binary as a child that redirects
// its stdout, prints stray text the usual ways (fmt to os.Stdout, a write
// to fd 1, a child process inheriting fd 1) and writes a protocol line to
// the returned file: the parent must find only the protocol line on the
// child's stdout, and the stray text on its stderr.
func TestRedirectStdout(t *testing.T) {
	t.Parallel()
	if os.Getenv("CAIRN_TEST_REDIRECT_CHILD") == "1" {
		redirectChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRedirectStdout$")
	cmd.Env = append(os.Environ(), "CAIRN_TEST_REDIRECT_CHILD=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\nstderr: %s", err, stderr.String())
	}
	if got := stdout.String(); got != "{\"protocol\":true}\n" {
		t.Errorf("stdout = %q, want only the protocol line", got)
	}
	for _, stray := range []string{"stray fmt", "stray fd1", "stray child"} {
		if !bytes.Contains(stderr.Bytes(), []byte(stray)) {
			t.Errorf("stderr lacks %q: %s", stray, stderr.String())
		}
	}
}

func redirectChild() {
	proto, err := RedirectStdout()
	if err != nil {
		fmt.Fprintln(os.Stderr, "redirect:", err)
		os.Exit(2)
	}
	fmt.Println("stray fmt")
	os.NewFile(1, "fd1").Write([]byte("stray fd1\n"))
	sh := exec.Command("sh", "-c", "echo stray child")
	sh.Stdout = os.Stdout
	if err := sh.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	proto.Write([]byte("{\"protocol\":true}\n"))
	proto.Close()
	os.Exit(0)
}
