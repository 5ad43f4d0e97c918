package notify_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/internal/reexec"
	"github.com/cairnhq/cairn/runs"
)

// The test binary doubles as the mcp-host processes of the crash test:
// CAIRN_NOTIFY_CHILD selects the role.
func TestMain(m *testing.M) { reexec.Main(m, "CAIRN_NOTIFY_CHILD", child) }

// child plays one role in the workspace CAIRN_TEST_WS (state root
// CAIRN_TEST_STATE), as a started host would:
//
//	fail   launch target "fails", print "settled" when it has, then
//	       keep delivering notifications until killed
//	send   deliver notifications until SIGTERM
func child(role string) int {
	syscall.Umask(0o077)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	h, err := host.Open(ctx, host.Config{StateRoot: os.Getenv("CAIRN_TEST_STATE"), Workspace: os.Getenv("CAIRN_TEST_WS"), Write: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer h.Close()
	if err := h.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	if role == "fail" {
		r, err := h.Runs.Launch(ctx, runs.LaunchParams{Target: "fails"})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		if _, err := h.Runs.WaitSettledOrParked(ctx, r.ID); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
	}
	fmt.Println("ready")
	<-ctx.Done()
	return 0
}
