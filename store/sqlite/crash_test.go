package sqlite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cairnhq/cairn/store"
)

const childEnv = "CAIRN_SQLITE_CRASH_CHILD"

// crashChild writes runs from four goroutines forever, printing
// "attempt <op>" before each write and "ack <op>" after it commits, until
// the parent kills it.
func crashChild(dbPath string) int {
	ctx := context.Background()
	s, err := Open(ctx, dbPath, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	prefix := os.Getenv(childEnv + "_PREFIX")
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format, args...)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				op := fmt.Sprintf("%s-%d-%d", prefix, g, i)
				say("attempt %s\n", op)
				err := s.CreateRun(store.WithOpID(ctx, "op-"+op), &store.Run{ID: "run-" + op, Target: "t", Literals: []byte(strings.Repeat("x", 200))})
				if err != nil {
					say("error %s %v\n", op, err)
					return
				}
				say("ack %s\n", op)
			}
		}()
	}
	wg.Wait()
	return 1
}

// TestCrashLoop kills a writing child at random moments and checks, after
// each kill, that the database is sound, that every acknowledged operation
// is there, that nothing was stored that was never attempted, and that the
// outcome of every operation in flight at the kill resolves.
func TestCrashLoop(t *testing.T) {
	t.Parallel()
	iterations := 20
	if os.Getenv("CAIRN_SOAK") != "" { // CI's soak: more kills
		iterations = 200
	}
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "state.sqlite3")
	attempted := map[string]bool{}
	acked := map[string]bool{}
	for it := range iterations {
		prefix := fmt.Sprintf("i%d", it)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+dbPath, childEnv+"_PREFIX="+prefix)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Kill after a random number of acknowledgements (0 to 60), so
		// kills land before, during and after commits.
		want, seen := rand.IntN(60), 0
		killed := false
		for line := range lines {
			record(t, line, attempted, acked)
			if strings.HasPrefix(line, "ack ") {
				seen++
			}
			if !killed && seen >= want {
				cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
		if !killed {
			cmd.Process.Signal(syscall.SIGKILL)
		}
		err = cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("iteration %d: child ended with %v, not by SIGKILL; stderr: %s", it, err, stderr.String())
		}
		verify(ctx, t, dbPath, attempted, acked)
	}
	if len(acked) < iterations {
		t.Fatalf("only %d operations acknowledged over %d iterations: the child barely wrote", len(acked), iterations)
	}
}

func record(t *testing.T, line string, attempted, acked map[string]bool) {
	t.Helper()
	switch f := strings.Fields(line); {
	case len(f) >= 2 && f[0] == "attempt":
		attempted[f[1]] = true
	case len(f) >= 2 && f[0] == "ack":
		acked[f[1]] = true
	case len(f) >= 1 && f[0] == "error":
		t.Fatalf("child write failed: %s", line)
	}
}

func verify(ctx context.Context, t *testing.T, dbPath string, attempted, acked map[string]bool) {
	t.Helper()
	s, err := Open(ctx, dbPath, Options{})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := s.Reader().QueryContext(ctx, "SELECT id FROM runs")
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		stored[strings.TrimPrefix(id, "run-")] = true
	}
	rows.Close()
	for op := range acked {
		if !stored[op] {
			t.Fatalf("acknowledged operation %s is missing after the kill", op)
		}
	}
	for op := range stored {
		if !attempted[op] {
			t.Fatalf("operation %s is stored but was never attempted", op)
		}
	}
	// Operations in flight at the kill: the store answers for each.
	for op := range attempted {
		if acked[op] {
			continue
		}
		o, err := s.Outcome(ctx, "op-"+op)
		if err != nil {
			t.Fatal(err)
		}
		if (o == store.Committed) != stored[op] {
			t.Fatalf("operation %s: outcome %v but run stored = %v", op, o, stored[op])
		}
		if o == store.Committed {
			acked[op] = true // resolved: from now on it must stay
		} else {
			delete(attempted, op) // resolved as never written: it must never appear
		}
	}
}
