package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/workspace"
)

// gatedShellYAML marks its start and end around a wait for the file go.
const gatedShellYAML = `name: gated
steps:
  - id: gated
    shell: |
      echo "start $$" >> marks.txt
      while [ ! -e go ]; do sleep 0.05; done
      echo "end $$" >> marks.txt
result: done
`

// TestSIGTERMHandsOffARunningStep: serve told to stop (SIGTERM) while a
// shell step runs exits 0 within 2 s, leaving the step to its
// supervisor; a background worker re-attaches to it, the step runs once
// and the run succeeds.
func TestSIGTERMHandsOffARunningStep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.root, ".cairn", "workflows", "gated.yaml"), []byte(gatedShellYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	s := e.serve("sigterm")
	tb := newToolbox(t, s)
	var r run
	tb.ok("launch_run", map[string]any{"target": "gated"}, &r)
	marks := filepath.Join(e.root, "marks.txt")
	until(t, "the step to start", func() bool { _, err := os.Stat(marks); return err == nil })
	servePID := s.cmd.Process.Pid

	signalled := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := <-s.done
	took := time.Since(signalled)
	s.done <- err // for the cleanup
	if err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; stderr:\n%s", err, s.stderr.String())
	}
	t.Logf("serve exited %s after SIGTERM", took.Round(time.Millisecond))
	// The bound is 2 s; twice that absorbs a loaded machine.
	if took > 4*time.Second {
		t.Errorf("serve took %s to exit after SIGTERM (want within 2 s)", took)
	}
	if b, _ := os.ReadFile(marks); strings.Contains(string(b), "end") {
		t.Fatalf("the step ended before it was let go: %q", b)
	}

	var shown struct {
		Status   string `json:"status"`
		Error    string `json:"error"`
		OwnerPID int    `json:"owner_pid"`
		Steps    []struct {
			PID int `json:"pid"`
		} `json:"steps"`
	}
	// A worker takes the run over while the step still runs.
	until(t, "a worker to resume the run", func() bool {
		out, err := e.command("--json", "runs", "show", r.ID)
		return err == nil && json.Unmarshal([]byte(out), &shown) == nil && shown.OwnerPID != 0 && shown.OwnerPID != servePID
	})
	worker := shown.OwnerPID
	until(t, "the worker to re-attach to the step", func() bool {
		return journalHas(t, e, r.ID, "pid "+strconv.Itoa(worker)+" re-attached to step gated")
	})
	if err := os.WriteFile(filepath.Join(e.root, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	until(t, "the handed-off run to settle", func() bool {
		out, err := e.command("--json", "runs", "show", r.ID)
		if err != nil || json.Unmarshal([]byte(out), &shown) != nil {
			return false
		}
		return shown.Status == "succeeded" || shown.Status == "failed" || shown.Status == "cancelled"
	})
	if shown.Status != "succeeded" {
		t.Fatalf("run %s %s: %s", r.ID, shown.Status, shown.Error)
	}
	b, _ := os.ReadFile(marks)
	lines := strings.Fields(string(b))
	if len(lines) != 4 || lines[0] != "start" || lines[2] != "end" || lines[1] != lines[3] {
		t.Fatalf("the step did not run once: %q", b)
	}
	if len(shown.Steps) != 1 || shown.Steps[0].PID == 0 || lines[1] != strconv.Itoa(shown.Steps[0].PID) {
		t.Fatalf("the run records %+v, the step that ran was pid %s", shown.Steps, lines[1])
	}
	if !journalHas(t, e, r.ID, "took the result step gated's supervisor recorded") {
		t.Fatalf("the worker did not take the supervisor's result")
	}
}

// journalHas reports whether run id's journal has a line containing s.
func journalHas(t *testing.T, e *env, id, s string) bool {
	t.Helper()
	ws, err := workspace.Resolve(e.root, "", e.state)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(ws.OutputDir(), id+".jsonl"))
	return strings.Contains(string(b), s)
}
