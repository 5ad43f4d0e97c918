package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/retention"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// seedRuns writes runs into the workspace's database, each with a journal.
func (c *cliWS) seedRuns(list ...*store.Run) {
	c.t.Helper()
	if err := c.ws.Prepare(); err != nil {
		c.t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), c.ws.DBPath(), sqlite.Options{})
	if err != nil {
		c.t.Fatal(err)
	}
	defer st.Close()
	for _, r := range list {
		if err := st.CreateRun(context.Background(), r); err != nil {
			c.t.Fatal(err)
		}
		if err := os.WriteFile(c.journalPath(r.ID), []byte("{}\n"), 0o600); err != nil {
			c.t.Fatal(err)
		}
	}
}

func (c *cliWS) journalPath(id string) string { return filepath.Join(c.ws.OutputDir(), id+".jsonl") }

func TestGC(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, nil)
	if err := os.WriteFile(filepath.Join(c.root, ".cairn", "config.yaml"), []byte("retention:\n  max_age: 1d\n  keep_per_target: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-72 * time.Hour)
	c.seedRuns(
		&store.Run{ID: "run_newest", Target: "hello", Status: store.RunSucceeded, CreatedAt: old.Add(time.Hour), FinishedAt: old.Add(time.Hour)},
		&store.Run{ID: "run_old", Target: "hello", Status: store.RunFailed, CreatedAt: old, FinishedAt: old},
		&store.Run{ID: "run_waits", Target: "hello", Status: store.RunWaiting, CreatedAt: old.Add(-time.Hour)},
	)

	code, out, errs := c.run("gc", "--dry-run", "--json")
	var rep retention.Report
	if code != ExitOK || json.Unmarshal([]byte(out), &rep) != nil || !rep.DryRun || strings.Join(rep.Deleted, ",") != "run_old" || rep.Examined != 3 {
		t.Fatalf("gc --dry-run --json: exit %d, %s %s", code, out, errs)
	}
	if _, err := os.Stat(c.journalPath("run_old")); err != nil {
		t.Fatalf("a dry run removed a journal: %v", err)
	}
	if code, out, _ := c.run("gc", "--dry-run"); code != ExitOK || !strings.Contains(out, "would delete 1 of 3 runs") || !strings.Contains(out, "run_old") {
		t.Fatalf("gc --dry-run: exit %d, %q", code, out)
	}

	code, out, errs = c.run("gc")
	if code != ExitOK || !strings.Contains(out, "deleted 1 of 3 runs and 1 journal files") {
		t.Fatalf("gc: exit %d, %q %s", code, out, errs)
	}
	if _, err := os.Stat(c.journalPath("run_old")); !os.IsNotExist(err) {
		t.Fatalf("journal of the collected run: %v", err)
	}
	if code, _, _ := c.run("runs", "show", "run_old"); code == ExitOK {
		t.Fatal("the collected run is still shown")
	}
	if code, out, _ := c.run("gc", "--json"); code != ExitOK || !strings.Contains(out, `"deleted": []`) {
		t.Fatalf("second gc --json: exit %d, %s", code, out)
	}
}

func TestRunsDelete(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, nil)
	now := time.Now()
	c.seedRuns(
		&store.Run{ID: "run_a", Target: "hello", Status: store.RunSucceeded, CreatedAt: now, FinishedAt: now},
		&store.Run{ID: "run_b", Target: "hello", Status: store.RunCancelled, CreatedAt: now, FinishedAt: now},
		&store.Run{ID: "run_waits", Target: "hello", Status: store.RunWaiting, CreatedAt: now},
	)
	if code, out, errs := c.run("runs", "delete", "run_a"); code != ExitOK || out != "deleted run_a\n" {
		t.Fatalf("runs delete run_a: exit %d, %q %s", code, out, errs)
	}
	if _, err := os.Stat(c.journalPath("run_a")); !os.IsNotExist(err) {
		t.Fatalf("journal of the deleted run: %v", err)
	}
	code, out, errs := c.run("runs", "delete", "run_b", "run_waits", "run_nope", "--json")
	var got struct {
		Deleted, Active, Missing []string
		Journals                 int
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("runs delete --json: %v\n%s", err, out)
	}
	if code != ExitFailure || strings.Join(got.Deleted, ",") != "run_b" || strings.Join(got.Active, ",") != "run_waits" || strings.Join(got.Missing, ",") != "run_nope" || got.Journals != 1 ||
		!strings.Contains(errs, "run run_waits is not settled: cancel it first") || !strings.Contains(errs, `no run "run_nope"`) {
		t.Fatalf("runs delete of a mix: exit %d, %+v, stderr %q", code, got, errs)
	}
	if code, _, errs := c.run("runs", "delete"); code != ExitUsage || !strings.Contains(errs, "one or more run ids") {
		t.Fatalf("runs delete without ids: exit %d, %q", code, errs)
	}
	if r := c.show("run_waits"); r.Status != store.RunWaiting {
		t.Fatalf("the waiting run: %+v", r)
	}
}
