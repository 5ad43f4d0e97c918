package locks

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestProcessGone(t *testing.T) {
	t.Parallel()
	if SelfStart().IsZero() {
		t.Skip("no /proc: start times are unknown")
	}
	if ProcessGone(Hostname(), os.Getpid(), SelfStart()) {
		t.Fatal("this process counts as gone")
	}
	if !ProcessGone(Hostname(), os.Getpid(), SelfStart().Add(-time.Second)) {
		t.Fatal("a process with this pid but another start time counts as alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if !ProcessGone(Hostname(), cmd.Process.Pid, SelfStart()) {
		t.Fatal("an exited child counts as alive")
	}
	if ProcessGone("another-machine", cmd.Process.Pid, SelfStart()) {
		t.Fatal("another machine's process counts as gone")
	}
}
