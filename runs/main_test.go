package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/reexec"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/workspace"
)

// The test binary doubles as the child processes of the multi-process
// tests: CAIRN_RUNS_CHILD selects what it does instead of testing.
func TestMain(m *testing.M) { reexec.Main(m, "CAIRN_RUNS_CHILD", child) }

// child runs one child process role and returns its exit code:
//
//	launch  launch CAIRN_TEST_TARGET with CAIRN_TEST_INPUT, attached; print
//	        the run id; wait until it settles or parks
//	follow  launch like launch, then follow it (resuming it when answered)
//	        until it settles; exit 0 when it succeeded
//	worker  run the peer loop until SIGTERM
//	pgpeer  run a leases-mode peer loop on PostgreSQL until SIGTERM
//	        (leases_pg_test.go)
func child(mode string) int {
	syscall.Umask(0o077)
	if mode == "pgpeer" {
		return pgPeer() // leases_pg_test.go
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ws, err := workspace.Resolve(os.Getenv("CAIRN_TEST_WS"), os.Getenv("CAIRN_TEST_WS"), os.Getenv("CAIRN_TEST_STATE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	if err := ws.Prepare(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	st, err := sqlite.Open(ctx, ws.DBPath(), sqlite.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer st.Close()
	e, err := New(Options{Store: st, Workspace: ws, AdoptEvery: 50 * time.Millisecond, KillGrace: 2 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer e.Stop()
	switch mode {
	case "launch", "follow":
		r, err := e.Launch(ctx, LaunchParams{Target: os.Getenv("CAIRN_TEST_TARGET"), Input: json.RawMessage(os.Getenv("CAIRN_TEST_INPUT"))})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		fmt.Println(r.ID)
		if mode == "launch" {
			if _, err := e.WaitSettledOrParked(ctx, r.ID); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 3
			}
			return 0
		}
		done, err := e.Watch(ctx, r.ID, WatchParams{Resume: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		if done.Status != store.RunSucceeded {
			fmt.Fprintf(os.Stderr, "run %s %s: %s\n", done.ID, done.Status, done.Error)
			return 1
		}
		return 0
	case "worker":
		if err := e.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		fmt.Println("ready") // see stopWorker
		<-ctx.Done()
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown child mode", mode)
	return 2
}

// childCmd returns the environment for a child of the given role working
// on te's workspace.
func (te *testEnv) childEnv(mode, target, input string) []string {
	return append(os.Environ(),
		// The race detector sleeps a second at exit by default; children
		// exit often.
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"),
		"CAIRN_RUNS_CHILD="+mode,
		"CAIRN_TEST_WS="+te.ws.Root,
		"CAIRN_TEST_STATE="+filepath.Dir(te.ws.StateDir),
		"CAIRN_TEST_TARGET="+target,
		"CAIRN_TEST_INPUT="+input,
	)
}
