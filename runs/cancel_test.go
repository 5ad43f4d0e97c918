package runs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/cairnhq/cairn/store"
)

func TestCancelWaitingRunAtOnce(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"hello.yaml": helloYAML})
	r := te.launch("hello", "")
	p := te.wait(te.e, r.ID)
	c, err := te.engine().Cancel(te.ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != store.RunCancelled || c.Question != nil {
		t.Fatalf("cancelled: %+v", c.Run)
	}
	if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: r.ID, QuestionID: p.Question.ID, Answer: "yes"}); err == nil || err.Error() != fmt.Sprintf("run %s is not waiting (status: cancelled)", r.ID) {
		t.Fatalf("answer after cancel: %v", err)
	}
	if _, err := te.e.Cancel(te.ctx, r.ID); err == nil || err.Error() != fmt.Sprintf("run %s is already cancelled", r.ID) {
		t.Fatalf("second cancel: %v", err)
	}
	out, err := te.e.ReadOutput(te.ctx, r.ID, ReadParams{})
	if err != nil || !out.Done || out.Records[len(out.Records)-1].Type != RecordEnd || out.Records[len(out.Records)-1].Status != "cancelled" {
		t.Fatalf("journal after cancel: %+v %v", out, err)
	}
}

func TestCancelRunningStepKillsItsGroup(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"long.yaml": `
steps:
  - id: nap
    shell: 'sleep 60 & echo "child $!"; wait'
`})
	r := te.launch("long", "")
	pid := waitStepStarted(t, te, te.e, r.ID, "nap")
	childPID := 0
	waitRecord(t, te, te.e, r.ID, func(rec Record) bool {
		_, err := fmt.Sscanf(rec.Text, "child %d", &childPID)
		return rec.Type == RecordText && err == nil
	})
	if _, err := te.e.Cancel(te.ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	done := te.wait(te.e, r.ID)
	if done.Status != store.RunCancelled || done.Steps[0].Status != StepCancelled {
		t.Fatalf("after cancel: %s %s", done.Status, stepStatuses(done))
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the step's process %d is still there: %v", pid, err)
	}
	// The background sleep in the step's group is gone too (it may linger
	// as a zombie until init reaps it, so read its state).
	if childPID != 0 && alive(childPID) {
		t.Fatalf("the step's background process %d is still running", childPID)
	}
}

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func TestCancelQueuedRunJournal(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"hello.yaml": helloYAML})
	r, err := te.e.Launch(te.ctx, LaunchParams{Target: "hello", Detach: true, Trigger: store.Trigger{Kind: "automation", AutomationID: "aut_x"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.RunQueued || r.OwnerPID != 0 || r.Trigger.AutomationID != "aut_x" {
		t.Fatalf("detached launch: %+v", r.Run)
	}
	c, err := te.e.Cancel(te.ctx, r.ID)
	if err != nil || c.Status != store.RunCancelled {
		t.Fatalf("cancel: %v %v", c, err)
	}
	recs := te.records(te.e, r.ID)
	if len(recs) != 2 || recs[0].Type != RecordStart || recs[0].Run != r.ID || recs[1].Type != RecordEnd || recs[1].Status != "cancelled" {
		t.Fatalf("journal: %+v", recs)
	}
	// Nothing runs it later.
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := te.e.Resume(te.ctx, r.ID); ok || err != nil {
		t.Fatalf("Resume of a cancelled run: %v %v", ok, err)
	}
}
