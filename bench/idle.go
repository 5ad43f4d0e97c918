package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/workspace"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat
// (100 on every Linux architecture Go supports).
const clockTicks = 100

// holdWorkflow keeps its run running for the whole idle window.
const holdWorkflow = `name: hold
description: One step that holds its run for ten minutes (the idle figure's runs).
steps:
  - id: hold
    exec: ["sleep", "600"]
    safe_to_repeat: true
    env:
      CAIRN_BENCH_MARK: "%s"
`

// figIdleCost measures figure 6.
func figIdleCost(ctx context.Context, b *bench) error {
	serves, owned, window, settle := 10, 10, 30*time.Second, 2*time.Second
	reps := min(b.reps, 3)
	if b.short {
		serves, owned, window, settle, reps = 3, 3, 2*time.Second, 500*time.Millisecond, 1
	}
	b.rec.declare(6, "CPU of the busiest idle serve", "%", atMost(0.1))
	b.rec.declare(6, "SIGKILL of the owner to all its runs adopted", "ms", atMost(200))
	b.rec.note(6, "%d idle serves, %d runs (`sleep 600`) owned by another serve, a window of %s after %s of settling, %d repetitions (a fresh workspace each). Adoption: the owner is SIGKILLed after the window; the harness reads the runs every millisecond. Load average at the start: %s (2 cores).", serves, owned, window, settle, reps, loadAverage())
	if b.short {
		b.rec.note(6, "smoke sizes: the 10 ms tick of utime+stime is too coarse for a 2 s window")
	}
	for rep := range reps {
		w, err := newWorkspace(ctx, b.disk.Dir, fmt.Sprintf("idle-%d", rep))
		if err != nil {
			return err
		}
		err = idleOnce(ctx, b, w, serves, owned, window, settle)
		w.cleanup()
		os.RemoveAll(filepath.Dir(w.Dir))
		if err != nil {
			return err
		}
	}
	return nil
}

func idleOnce(ctx context.Context, b *bench, w *benchWorkspace, nServes, nRuns int, window, settle time.Duration) error {
	wf := filepath.Join(w.Dir, workspace.DefsDirName, "workflows", "hold.yaml")
	if err := os.WriteFile(wf, []byte(fmt.Sprintf(holdWorkflow, w.Marker)), 0o600); err != nil {
		return err
	}
	st, err := sqlite.Open(ctx, w.WS.DBPath(), sqlite.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer st.Close()
	owner, err := serve(ctx, b, w)
	if err != nil {
		return err
	}
	defer owner.kill()
	var ids []string
	for range nRuns {
		res, err := owner.callTool("launch_run", map[string]any{"target": "hold"})
		if err != nil {
			return err
		}
		var out struct {
			RunID string `json:"run_id"`
			ID    string `json:"id"`
		}
		if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
			return fmt.Errorf("decode launch_run result: %w", err)
		}
		ids = append(ids, cmpOr(out.RunID, out.ID))
	}
	err = waitFor(ctx, 30*time.Second, 10*time.Millisecond, func() (bool, error) {
		rs, _, err := st.ListRuns(ctx, store.RunFilter{Status: []store.RunStatus{store.RunRunning}, Limit: nRuns + 1})
		return err == nil && len(rs) == nRuns && len(pidsWithEnv("CAIRN_BENCH_MARK="+w.Marker)) >= nRuns, err
	})
	if err != nil {
		return fmt.Errorf("wait for the owner to run %d steps: %w%s", nRuns, err, owner.stderrTail())
	}
	var peers []*host
	defer func() {
		for _, p := range peers {
			p.kill() // not stop: a serve leaving with work would start a worker
		}
	}()
	var pids []int
	for range nServes {
		h, err := serve(ctx, b, w)
		if err != nil {
			return err
		}
		peers = append(peers, h)
		pids = append(pids, h.cmd.Process.Pid)
	}
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return ctx.Err()
	}
	before := make([]procCPU, len(pids))
	for i, pid := range pids {
		if before[i], err = readProcCPU(pid); err != nil {
			return err
		}
	}
	ownerBefore, _ := readProcCPU(owner.cmd.Process.Pid)
	t0 := time.Now()
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return ctx.Err()
	}
	secs := time.Since(t0).Seconds()
	var cpu, precise, wakes []float64
	for i, pid := range pids {
		after, err := readProcCPU(pid)
		if err != nil {
			return fmt.Errorf("serve %d: %w%s", pid, err, peers[i].stderrTail())
		}
		cpu = append(cpu, float64(after.ticks-before[i].ticks)/clockTicks/secs*100)
		precise = append(precise, float64(after.runNs-before[i].runNs)/1e9/secs*100)
		wakes = append(wakes, float64(after.switches-before[i].switches)/secs)
	}
	ownerAfter, _ := readProcCPU(owner.cmd.Process.Pid)
	b.rec.add(6, "CPU of the busiest idle serve", "%", atMost(0.1), slices.Max(cpu))
	b.rec.add(6, "CPU of the median idle serve", "%", goal{}, percentile(cpu, 50))
	b.rec.add(6, "diagnostic: CPU of the busiest idle serve from schedstat (ns)", "%", goal{}, slices.Max(precise))
	b.rec.add(6, "diagnostic: wake-ups (context switches) a second, median serve", "", goal{}, percentile(wakes, 50))
	b.rec.add(6, "diagnostic: CPU of the owner (10 runs, scheduler duty)", "%", goal{}, float64(ownerAfter.ticks-ownerBefore.ticks)/clockTicks/secs*100)
	b.logf("fig %d: CPU per idle serve %v %%, wake-ups/s %v", 6, rounded(cpu), rounded(wakes))

	lat, err := killAndTimeAdoption(ctx, st, owner, ids, pids, func() string { return "" })
	if err != nil {
		return err
	}
	b.rec.add(6, "SIGKILL of the owner to all its runs adopted", "ms", atMost(200), lat[len(lat)-1])
	b.rec.add(6, "SIGKILL of the owner to its first run adopted", "ms", goal{}, lat[0])
	b.logf("fig %d: adopted %d runs %.1f–%.1f ms after the kill", 6, len(lat), lat[0], lat[len(lat)-1])
	return nil
}

// procCPU is what a process has used so far.
type procCPU struct {
	ticks    int64 // utime+stime, in clockTicks
	runNs    int64 // time on a CPU, summed over its threads (schedstat)
	switches int64 // context switches, summed over its threads
}

func readProcCPU(pid int) (procCPU, error) {
	var c procCPU
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return c, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from 3 on
	ut, err1 := strconv.ParseInt(f[11], 10, 64)              // field 14
	stm, err2 := strconv.ParseInt(f[12], 10, 64)             // field 15
	if err1 != nil || err2 != nil {
		return c, fmt.Errorf("read /proc/%d/stat: %q", pid, s)
	}
	c.ticks = ut + stm
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		dir := fmt.Sprintf("/proc/%d/task/%s", pid, t.Name())
		if b, err := os.ReadFile(dir + "/schedstat"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				c.runNs += n
			}
		}
		if b, err := os.ReadFile(dir + "/status"); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
					n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					c.switches += n
				}
			}
		}
	}
	return c, nil
}

func rounded(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(int(x*1000+0.5)) / 1000
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
