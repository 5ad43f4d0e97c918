package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/workspace"
)

// benchWorkflows are the workflow files every bench workspace holds.
//
// step is the throughput workflow (figures 1 and 2): one step that runs
// as any step does (its start recorded before it proceeds, its result
// with the run's end) and starts no process: a sleep whose wake time has
// passed when it is checked (wake times are kept to the millisecond).
// noop is the one-step no-op workflow: one step whose condition is false,
// so the engine evaluates it and records it skipped without starting a
// process: the closest a workflow file comes to River's no-op worker (a
// zero sleep is refused, and any exec would measure fork and exec). slow holds its owner for a while (figure 5); its step is
// safe to repeat, so an adopting peer re-runs it without asking, and it
// carries a marker in its environment so that the harness can find, by
// pid, the step processes a SIGKILLed owner leaves behind.
func benchWorkflows(marker string) map[string]string {
	return map[string]string{
		"noop.yaml": `name: noop
description: One step that does nothing (the benchmark's no-op workflow).
steps:
  - id: nothing
    if: false
    exec: ["true"]
`,
		"step.yaml": `name: step
description: One step that runs and does nothing (the benchmark's throughput workflow).
steps:
  - id: tick
    sleep: 1ns
`,
		"slow.yaml": `name: slow
description: One step that holds its owner for 20 seconds (the benchmark's adoption workflow).
steps:
  - id: hold
    exec: ["sleep", "20"]
    safe_to_repeat: true
    env:
      CAIRN_BENCH_MARK: "` + marker + `"
`,
	}
}

// benchWorkspace is a workspace folder with its own state root.
type benchWorkspace struct {
	Dir       string // the workspace (holds .cairn/)
	StateRoot string
	WS        *workspace.Workspace
	Marker    string
}

// newWorkspace lays out a workspace under base with the bench workflows,
// and its state folder (created, with an up-to-date empty store).
func newWorkspace(ctx context.Context, base, name string) (*benchWorkspace, error) {
	root := filepath.Join(base, name)
	w := &benchWorkspace{
		Dir:       filepath.Join(root, "ws"),
		StateRoot: filepath.Join(root, "state"),
		Marker:    fmt.Sprintf("cairn-bench-%d-%s", os.Getpid(), name),
	}
	wfDir := filepath.Join(w.Dir, workspace.DefsDirName, "workflows")
	if err := os.MkdirAll(wfDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(w.StateRoot, 0o700); err != nil {
		return nil, err
	}
	for file, body := range benchWorkflows(w.Marker) {
		if err := os.WriteFile(filepath.Join(wfDir, file), []byte(body), 0o600); err != nil {
			return nil, err
		}
	}
	ws, err := workspace.Resolve(w.Dir, "", w.StateRoot)
	if err != nil {
		return nil, fmt.Errorf("resolve workspace %s: %w", w.Dir, err)
	}
	if err := ws.Prepare(); err != nil {
		return nil, fmt.Errorf("prepare workspace %s: %w", w.Dir, err)
	}
	w.WS = ws
	st, err := sqlite.Open(ctx, ws.DBPath(), sqlite.Options{})
	if err != nil {
		return nil, err
	}
	return w, st.Close()
}

// openStore opens the workspace's store for seeding.
func (w *benchWorkspace) openStore(ctx context.Context, synchronous string) (*sqlite.Store, error) {
	return sqlite.Open(ctx, w.WS.DBPath(), sqlite.Options{Synchronous: synchronous})
}

// holderPID reads the pid from a lock's holder record without touching
// the lock itself (locks.Describe would take it for an instant, which can
// make a starting process's TryLock fail). 0 when there is none.
func (w *benchWorkspace) holderPID(name string) int {
	b, err := os.ReadFile(filepath.Join(w.WS.LocksDir(), name))
	if err != nil || len(b) == 0 {
		return 0
	}
	var h struct {
		PID int `json:"pid"`
	}
	if json.Unmarshal(b, &h) != nil {
		return 0
	}
	return h.PID
}

// cleanup ends, by pid, what mcp-host processes of this workspace may have
// left running: a background worker (a serve hands its work to one when
// its client leaves) and the step processes of a killed owner (found by
// the marker in their environment). It only signals processes that carry
// this workspace's marker or hold its worker lock.
func (w *benchWorkspace) cleanup() {
	if pid := w.holderPID("worker"); pid > 0 && pid != os.Getpid() && processAlive(pid) {
		syscall.Kill(pid, syscall.SIGTERM)
		deadline := time.Now().Add(5 * time.Second)
		for processAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if processAlive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for _, pid := range pidsWithEnv("CAIRN_BENCH_MARK=" + w.Marker) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie (state Z) has died; its parent has not reaped it yet.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// pidsWithEnv lists the processes whose environment holds entry.
func pidsWithEnv(entry string) []int {
	dirs, _ := os.ReadDir("/proc")
	var pids []int
	for _, d := range dirs {
		var pid int
		if _, err := fmt.Sscanf(d.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, e := range strings.Split(string(b), "\x00") {
			if e == entry {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
