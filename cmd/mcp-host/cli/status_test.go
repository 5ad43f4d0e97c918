package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

func TestStatusEmptyStateRoot(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "state")
	code, out, errs := runCLI(t, "status", "--state", root)
	if code != 0 || out != fmt.Sprintf("no workspaces under %s\n", root) {
		t.Fatalf("status: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, _ = runCLI(t, "status", "--json", "--state", root)
	var rep statusReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.StateRoot != root || rep.Workspaces == nil || len(rep.Workspaces) != 0 {
		t.Fatalf("status --json: exit %d, %s", code, out)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("status created the state root: %v", err)
	}
}

func TestStatusPopulated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCLIWS(t, nil)
	ws := c.ws
	s := c.openStore()
	if err := ws.Touch(time.Now()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.CreateRun(ctx, &store.Run{ID: fmt.Sprintf("run_%d", i), Target: "hello"}); err != nil {
			t.Fatal(err)
		}
	}
	nightly := &store.Automation{ID: "aut_1", Key: "nightly", Owner: "cli", Target: "hello", Enabled: true,
		Trigger: store.AutomationTrigger{Kind: store.TriggerCron, Cron: "0 3 * * *", TZ: "UTC"}}
	if err := s.CreateAutomation(ctx, nightly); err != nil {
		t.Fatal(err)
	}
	s.Close()
	lk, err := locks.TryLock(ws.LocksDir(), "scheduler")
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()

	code, out, errs := c.run("status")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errs)
	}
	for _, want := range []string{ws.Root + " (here)", "id          " + ws.ID, fmt.Sprintf("scheduler   pid %d since", os.Getpid()), "worker      not running", "runs 3 · automations 1 · sessions 0", "nightly", "→ hello · last never"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = c.run("status", "--json")
	var rep statusReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Workspaces) != 1 {
		t.Fatalf("status --json: exit %d, %s", code, out)
	}
	w := rep.Workspaces[0]
	if !w.Here || w.ID != ws.ID || !w.Scheduler.Running || w.Scheduler.PID != os.Getpid() || w.Worker.Running || w.Counts.Runs != 3 || len(w.Schedules) != 1 || w.Schedules[0].Key != "nightly" {
		t.Fatalf("status --json workspace = %+v", w)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"no-such-command"}, {"status", "--no-such-flag"}, {"status", "extra"}, {"--log-level", "loud", "status"}} {
		code, _, errs := runCLI(t, args...)
		if code != ExitUsage || !strings.HasPrefix(errs, "mcp-host: ") || !strings.Contains(errs, "Usage:") {
			t.Errorf("%v: exit %d, stderr %q; want 2 with a reason and the usage", args, code, errs)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, _ := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "mcp-host ") {
		t.Fatalf("version: exit %d, %q", code, out)
	}
}

func TestBackupCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCLIWS(t, nil)
	dest := filepath.Join(t.TempDir(), "copy.sqlite3")
	if code, _, errs := c.run("backup", dest); code != 1 || !strings.Contains(errs, "nothing to back up") {
		t.Fatalf("backup with no state: exit %d %q", code, errs)
	}
	s := c.openStore()
	defer s.Close() // a live store: backup runs beside it
	if err := s.CreateRun(ctx, &store.Run{ID: "run_1", Target: "hello"}); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := c.run("backup", dest); code != 0 || !strings.Contains(out, "backed up") {
		t.Fatalf("backup: exit %d %q %q", code, out, errs)
	}
	b, err := sqlite.Open(ctx, dest, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.GetRun(ctx, "run_1"); err != nil {
		t.Fatalf("the backup lacks run_1: %v", err)
	}
	if code, _, errs := c.run("backup", dest); code != 1 || !strings.Contains(errs, "choose a new file name") {
		t.Fatalf("backup over an existing file: exit %d %q", code, errs)
	}
}
