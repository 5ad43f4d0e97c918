package sessions_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/cairnhq/cairn/internal/reexec"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// The test binary doubles as the child process of the multi-process tests:
// with CAIRN_SESSIONS_CHILD set it runs that child instead of the tests.
func TestMain(m *testing.M) {
	reexec.Main(m, "CAIRN_SESSIONS_CHILD", func(mode string) int {
		if err := runChild(mode); err != nil {
			fmt.Fprintf(os.Stderr, "child %s: %v\n", mode, err)
			return 1
		}
		return 0
	})
}

func runChild(mode string) error {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, os.Getenv("CAIRN_DB"), sqlite.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	id := os.Getenv("CAIRN_SESSION")
	switch mode {
	case "append":
		return childAppend(ctx, st, id)
	case "compact":
		return childCompact(ctx, st, id)
	case "append-timed":
		return childAppendTimed(ctx, st, id)
	}
	return fmt.Errorf("unknown child mode %q", mode)
}

// childAppend appends CAIRN_COUNT messages, one per call, each with
// metadata {"proc": CAIRN_PROC, "i": i}, once the parent says go (a line
// on stdin).
func childAppend(ctx context.Context, st store.Store, id string) error {
	proc, _ := strconv.Atoi(os.Getenv("CAIRN_PROC"))
	count, _ := strconv.Atoi(os.Getenv("CAIRN_COUNT"))
	m := sessions.New(st, sessions.Options{})
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("wait for go: %w", err)
	}
	for i := range count {
		msg := sessions.MessageInput{Role: store.RoleUser, Text: fmt.Sprintf("p%d-%d", proc, i), Metadata: []byte(fmt.Sprintf(`{"proc":%d,"i":%d}`, proc, i))}
		if _, err := m.Append(ctx, id, []sessions.MessageInput{msg}); err != nil {
			return fmt.Errorf("append %d: %w", i, err)
		}
	}
	return nil
}

// childCompact compacts the session with the summary in
// CAIRN_SUMMARY_FILE once the parent says go (a line on stdin), so that the
// parent can start it ahead, while it checks the previous child's work.
// With CAIRN_CRASH_AT set it kills itself (SIGKILL) at that step.
func childCompact(ctx context.Context, st store.Store, id string) error {
	m := sessions.New(st, sessions.Options{MemoryDir: os.Getenv("CAIRN_MEMORY"), LocksDir: os.Getenv("CAIRN_LOCKS")})
	if at := os.Getenv("CAIRN_CRASH_AT"); at != "" {
		sessions.SetHook(m, func(step string) error {
			if step == at {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
			return nil
		})
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("wait for go: %w", err)
	}
	summary, err := os.ReadFile(os.Getenv("CAIRN_SUMMARY_FILE"))
	if err != nil {
		return err
	}
	res, err := m.Compact(ctx, sessions.CompactParams{SessionID: id, Summary: string(summary)})
	if err != nil {
		return err
	}
	fmt.Printf("done %s\n", res.Archive.ID)
	return nil
}
