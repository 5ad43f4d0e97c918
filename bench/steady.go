package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"modernc.org/sqlite"
)

// tpResult is one throughput measurement.
type tpResult struct {
	Rate    float64 // jobs (runs) per second, steady state: see completions.steadyRate
	Commits float64 // SQLite commits per job (run), counted by SQLite's commit hook
	Writes  float64 // store write operations per run (ours only)
	// CPU is the process's CPU time (user and system, every thread) per
	// job, from first launch to last completion.
	CPU time.Duration
	// WriterBusy is the share of that time the store's writer goroutine
	// spent running batches and commits, WriterPerRun that time per run
	// (ours on SQLite only).
	WriterBusy   float64
	WriterPerRun time.Duration
}

// processCPU is the CPU time this process has used (getrusage).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// completions are the times jobs completed, since begin.
type completions struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
}

func newCompletions(n int) *completions {
	return &completions{at: make([]time.Duration, 0, n)}
}

func (c *completions) begin() {
	c.mu.Lock()
	c.start = time.Now()
	c.mu.Unlock()
}

// elapsed is the time from begin to the last completion.
func (c *completions) elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.at) == 0 {
		return 0
	}
	return slices.Max(c.at)
}

// mark notes one completion, now.
func (c *completions) mark() {
	now := time.Now()
	c.mu.Lock()
	c.at = append(c.at, now.Sub(c.start))
	c.mu.Unlock()
}

// steadyRate is the completion rate between the 10th and the 90th
// percentile of the completion times: the first and last tenth, where
// the system fills and drains, are left out.
func (c *completions) steadyRate() (float64, error) {
	c.mu.Lock()
	at := slices.Clone(c.at)
	c.mu.Unlock()
	return steadyRate(at)
}

func steadyRate(at []time.Duration) (float64, error) {
	if len(at) < 10 {
		return 0, fmt.Errorf("steady rate: %d completions, need at least 10", len(at))
	}
	slices.Sort(at)
	lo, hi := len(at)/10, len(at)*9/10-1
	d := at[hi] - at[lo]
	if d <= 0 {
		return 0, fmt.Errorf("steady rate: completions %d to %d at the same instant", lo, hi)
	}
	return float64(hi-lo) / d.Seconds(), nil
}

// commitCounters counts, per database file, the commits SQLite made in
// this process: a connection hook registers a commit hook
// (sqlite3_commit_hook, called for every transaction that writes) on
// every connection modernc.org/sqlite opens, Cairn's, River's and
// goqite's alike.
var commitCounters sync.Map // database path -> *atomic.Int64

func init() {
	sqlite.RegisterConnectionHook(func(conn sqlite.ExecQuerierContext, dsn string) error {
		h, ok := conn.(sqlite.HookRegisterer)
		if !ok {
			return nil
		}
		n := commitCounter(dsnPath(dsn))
		h.RegisterCommitHook(func() int32 {
			n.Add(1)
			return 0 // 0: let the commit proceed
		})
		return nil
	})
}

func commitCounter(path string) *atomic.Int64 {
	v, _ := commitCounters.LoadOrStore(path, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// commitsOf is the commits made so far to the database at path.
func commitsOf(path string) int64 { return commitCounter(path).Load() }

// dsnPath is the file a "file:PATH?params" DSN names (bench paths need
// no escaping).
func dsnPath(dsn string) string {
	p, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	return p
}

// fsyncCount counts this process's fsync and fdatasync system calls
// while it runs: `perf stat` attached to the process, counting the
// kernel's syscall tracepoints (every thread, the ones created later
// included).
type fsyncCount struct {
	cmd  *exec.Cmd
	out  string
	err  error
	done chan struct{}
}

func startFsyncCount() *fsyncCount {
	f := &fsyncCount{done: make(chan struct{})}
	out, err := os.CreateTemp("", "bench-perf-*.csv")
	if err != nil {
		f.err = err
		return f
	}
	out.Close()
	f.out = out.Name()
	f.cmd = exec.Command("perf", "stat", "-x,", "-o", f.out, "-e", "syscalls:sys_enter_fsync,syscalls:sys_enter_fdatasync", "-p", strconv.Itoa(os.Getpid()))
	var stderr strings.Builder
	f.cmd.Stderr = &stderr
	if f.err = f.cmd.Start(); f.err != nil {
		f.err = fmt.Errorf("start perf: %w", f.err)
		return f
	}
	go func() {
		f.cmd.Wait()
		close(f.done)
	}()
	// perf attaches to every thread before it counts: wait until it has
	// (its counters are enabled once /proc shows it in its event loop), at
	// most a second.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) && !perfAttached(f.cmd.Process.Pid) {
		select {
		case <-f.done:
			f.err = fmt.Errorf("perf stat ended: %s", strings.TrimSpace(stderr.String()))
			return f
		case <-time.After(5 * time.Millisecond):
		}
	}
	return f
}

// perfAttached reports whether perf (pid) sleeps in its wait loop, which it
// enters once its counters are open.
func perfAttached(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
	return err == nil && strings.Contains(string(b), "poll")
}

// stop ends the count and returns the system calls counted.
func (f *fsyncCount) stop() (int64, error) {
	if f.out != "" {
		defer os.Remove(f.out)
	}
	if f.err != nil {
		return 0, f.err
	}
	f.cmd.Process.Signal(os.Interrupt)
	select {
	case <-f.done:
	case <-time.After(5 * time.Second):
		f.cmd.Process.Kill()
		<-f.done
		return 0, errors.New("perf stat did not stop")
	}
	b, err := os.ReadFile(f.out)
	if err != nil {
		return 0, err
	}
	var n int64
	seen := 0
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Split(line, ",")
		if len(fields) < 3 || !strings.HasPrefix(fields[2], "syscalls:") {
			continue
		}
		v, err := strconv.ParseInt(fields[0], 10, 64)
		if fields[0] == "<not counted>" {
			v, err = 0, nil // the counter never ran: no thread made a call
		}
		if err != nil {
			return 0, fmt.Errorf("perf stat: %q not counted", line)
		}
		n += v
		seen++
	}
	if seen != 2 {
		return 0, fmt.Errorf("perf stat: no counts in %q", b)
	}
	return n, nil
}
