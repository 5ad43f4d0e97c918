//go:build linux

package runs

import (
	"syscall"
	"testing"
	"time"
)

// TestCommandDiesWithItsSupervisor: on Linux a step's command gets the
// parent-death signal: SIGKILLed with its supervisor, it goes at once,
// with no engine there to kill what is left of the step's group.
func TestCommandDiesWithItsSupervisor(t *testing.T) {
	t.Parallel()
	te := setup(t, nil)
	id := "run_pdeath"
	spec := te.stepSpec(id, "nap", "")
	spec.Argv = []string{"sleep", "60"} // the supervisor's own child
	s, err := te.execution(id).startSupervisor(spec)
	if err != nil {
		t.Fatal(err)
	}
	var cmd procRef
	for deadline := time.Now().Add(30 * time.Second); cmd.PID == 0; {
		if state, err := readStepState(stepFilePath(te.ws.OutputDir(), id)); err == nil && state != nil {
			cmd = state.Command
		}
		if time.Now().After(deadline) {
			t.Fatal("the supervisor never recorded its command")
		}
		time.Sleep(5 * time.Millisecond) // another process's file: nothing to wait on but time
	}
	t.Cleanup(func() { _ = signalProcess(cmd, syscall.SIGKILL) }) // after a failure
	if !alive(cmd.PID) {
		t.Fatalf("the command %d is not running", cmd.PID)
	}
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.done
	for deadline := time.Now().Add(30 * time.Second); alive(cmd.PID) && cmd.isAlive(); {
		if time.Now().After(deadline) {
			t.Fatalf("the command %d outlived its SIGKILLed supervisor", cmd.PID)
		}
		time.Sleep(5 * time.Millisecond) // the kernel's signal: nothing to wait on but time
	}
}
