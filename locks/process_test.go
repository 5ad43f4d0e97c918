package locks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A lock held by another process is refused and named; the moment that
// process dies it is free, with no manual step and no grace period.
func TestHolderDiesLockIsFree(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "locks")
	c := holdInChild(t, dir, "scheduler")
	pid := c.cmd.Process.Pid

	_, err := TryLock(dir, "scheduler")
	var held *HeldError
	if !errors.Is(err, ErrHeld) || !errors.As(err, &held) {
		t.Fatalf("TryLock = %v, want a *HeldError", err)
	}
	if held.Holder.PID != pid || held.Name != "scheduler" {
		t.Errorf("HeldError = %+v, want pid %d", held, pid)
	}
	if want := fmt.Sprintf("scheduler is held by pid %d (since ", pid); !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %q, want prefix %q", err, want)
	}
	h, ok, err := Describe(dir, "scheduler")
	if err != nil || !ok || h.PID != pid {
		t.Fatalf("Describe = %v, %v, %v; want held by pid %d", h, ok, err, pid)
	}
	if me := self(); me.bootID != "" && (h.BootID != me.bootID || h.StartTime.IsZero()) {
		t.Errorf("holder %+v lacks boot id %s or start time", h, me.bootID)
	}

	if err := c.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = c.cmd.Wait() // killed: an error is expected

	// The record the dead child left behind is not a holder.
	if h, ok, err := Describe(dir, "scheduler"); err != nil || ok {
		t.Errorf("Describe after kill = %v, %v, %v; want not held", h, ok, err)
	}
	l, err := TryLock(dir, "scheduler")
	if err != nil {
		t.Fatalf("TryLock after kill: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// Acquire gives up at its deadline with an error that names the holder,
// and otherwise waits until the holder lets go.
func TestAcquireWaitsForHolder(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "locks")
	c := holdInChild(t, dir, "run-1")
	pid := c.cmd.Process.Pid

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := Acquire(ctx, dir, "run-1")
	var held *HeldError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrHeld) || !errors.As(err, &held) {
		t.Fatalf("Acquire = %v, want deadline exceeded and a *HeldError", err)
	}
	if held.Holder.PID != pid || !strings.Contains(err.Error(), fmt.Sprintf("held by pid %d", pid)) {
		t.Errorf("Acquire error %q does not name pid %d", err, pid)
	}

	// Now wait without a deadline while the child lets go.
	type result struct {
		l   *Lock
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := Acquire(t.Context(), dir, "run-1")
		got <- result{l, err}
	}()
	c.wait(t)
	r := <-got
	if r.err != nil {
		t.Fatalf("Acquire after release: %v", r.err)
	}
	if h, ok, err := Describe(dir, "run-1"); err != nil || !ok || h.PID != os.Getpid() {
		t.Errorf("Describe = %v, %v, %v; want held by us", h, ok, err)
	}
	if err := r.l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// Processes that contend for one lock never overlap inside it.
func TestContendingProcessesExclude(t *testing.T) {
	t.Parallel()
	const procs, iterations = 8, 30
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "locks")
	file := filepath.Join(tmp, "critical.log")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	children := make([]*child, procs)
	pids := map[int]int{} // pid -> pairs seen
	for i := range children {
		children[i] = startChild(t, "contend", dir, "schedule:nightly", file, strconv.Itoa(iterations))
		pids[children[i].cmd.Process.Pid] = 0
	}
	for _, c := range children {
		c.expect(t, "ready")
	}
	for _, c := range children {
		if err := c.write("go\n"); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, c := range children {
		wg.Go(func() { c.wait(t) })
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2*procs*iterations {
		t.Fatalf("%d lines, want %d", len(lines), 2*procs*iterations)
	}
	for i := 0; i < len(lines); i += 2 {
		var begin, end int
		if _, err := fmt.Sscanf(lines[i], "begin %d", &begin); err != nil {
			t.Fatalf("line %d = %q, want begin: %v", i+1, lines[i], err)
		}
		if _, err := fmt.Sscanf(lines[i+1], "end %d", &end); err != nil || end != begin {
			t.Fatalf("line %d = %q after %q: two processes overlapped", i+2, lines[i+1], lines[i])
		}
		if _, ok := pids[begin]; !ok {
			t.Fatalf("line %d names pid %d, not a child", i+1, begin)
		}
		pids[begin]++
	}
	for pid, n := range pids {
		if n != iterations {
			t.Errorf("pid %d entered %d times, want %d", pid, n, iterations)
		}
	}
}

// Lock descriptors are close-on-exec: a child process does not inherit them.
func TestDescriptorNotInherited(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd here")
	}
	dir := filepath.Join(t.TempDir(), "locks")
	l, err := TryLock(dir, "worker")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	path := filepath.Join(dir, "worker")

	// childFDs lists what a child has open, after passing it extra files.
	childFDs := func(extra ...*os.File) []string {
		c := startChildWith(t, func(cmd *exec.Cmd) { cmd.ExtraFiles = extra }, "fds")
		var targets []string
		for {
			line, err := c.stdout.ReadString('\n')
			if err != nil {
				break
			}
			targets = append(targets, strings.TrimSuffix(line, "\n"))
		}
		c.wait(t)
		return targets
	}

	// The check can see a leak: a descriptor passed on purpose shows up.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := childFDs(f); !slices.Contains(got, path) {
		t.Fatalf("child with the lock file in ExtraFiles lists %q, want %s among them", got, path)
	}
	got := childFDs()
	if len(got) == 0 {
		t.Fatal("child listed no descriptors")
	}
	if slices.Contains(got, path) {
		t.Errorf("child inherited a descriptor of %s: %q", path, got)
	}
}
