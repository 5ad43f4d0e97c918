package automations

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
)

const nightlyYAML = `name: nightly
steps:
  - id: a
    exec: ["true"]
on:
  - cron: "0 3 * * 1-5"
    tz: Europe/Paris
  - every: 30m
  - files: "src/**/*.go"
    every: 10s
  - http: "http://127.0.0.1:8080/health"
    every: 60s
`

func keys(list []*store.Automation) []string {
	var out []string
	for _, a := range list {
		out = append(out, a.Key+"="+Describe(a.Trigger))
	}
	return out
}

func TestSyncFollowsWorkflowFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st := memory.New()
	defer st.Close()
	sync := func() SyncReport {
		t.Helper()
		rep, err := Sync(ctx, SyncParams{Store: st, Dir: dir, Clock: clock.NewFake(t0)})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	list := func() []string {
		t.Helper()
		l, err := st.ListAutomations(ctx, store.AutomationFilter{Owner: store.OwnerConfig})
		if err != nil {
			t.Fatal(err)
		}
		return keys(l)
	}
	writeFile(t, filepath.Join(dir, "nightly.yaml"), nightlyYAML)
	rep := sync()
	want := []string{
		"nightly:0=cron 0 3 * * 1-5 (Europe/Paris)",
		"nightly:1=every 30m",
		"nightly:2=files src/**/*.go every 10s",
		"nightly:3=http http://127.0.0.1:8080/health every 1m",
	}
	if got := list(); !slices.Equal(got, want) || len(rep.Created) != 4 {
		t.Fatalf("after the first sync: %v (report %+v)", got, rep)
	}
	a, _ := st.ListAutomations(ctx, store.AutomationFilter{Key: "nightly:0"})
	if a[0].Target != "nightly" || a[0].Source != "nightly.yaml" || a[0].Owner != store.OwnerConfig {
		t.Fatalf("synced automation: %+v", a[0])
	}
	// Nothing changed: nothing written.
	if rep := sync(); len(rep.Created)+len(rep.Updated)+len(rep.Deleted) != 0 {
		t.Fatalf("a second sync changed %+v", rep)
	}
	// A paused config automation stays paused over a change of its spec.
	svc := &Service{Store: st, LocksDir: t.TempDir(), Targets: &WorkflowTargets{Dir: dir}}
	if _, err := svc.Pause(ctx, "nightly:1", "too often"); err != nil {
		t.Fatal(err)
	}
	every := "1h"
	if _, err := svc.Update(ctx, UpdateParams{Ref: "nightly:1", Every: &every}); err == nil || !strings.Contains(err.Error(), "edit the file") {
		t.Fatalf("editing a config automation's spec: %v", err)
	}
	if _, err := svc.Delete(ctx, DeleteParams{Ref: "nightly:1"}); err == nil || !strings.Contains(err.Error(), "remove the trigger") {
		t.Fatalf("deleting a config automation: %v", err)
	}
	writeFile(t, filepath.Join(dir, "nightly.yaml"), strings.Replace(nightlyYAML, "every: 30m", "every: 45m", 1))
	if rep := sync(); !slices.Equal(rep.Updated, []string{"nightly:1"}) {
		t.Fatalf("report %+v", rep)
	}
	a, _ = st.ListAutomations(ctx, store.AutomationFilter{Key: "nightly:1"})
	if a[0].Trigger.Every != "45m" || a[0].Enabled || a[0].Note != "too often" {
		t.Fatalf("updated: %+v", a[0])
	}
	// A broken file keeps its automations; a bad trigger keeps its one.
	writeFile(t, filepath.Join(dir, "nightly.yaml"), "name: nightly\nsteps: [")
	if rep := sync(); len(rep.Problems) == 0 || len(rep.Deleted) != 0 {
		t.Fatalf("broken file: %+v", rep)
	}
	writeFile(t, filepath.Join(dir, "nightly.yaml"), strings.Replace(nightlyYAML, "0 3 * * 1-5", "0 0 30 2 *", 1))
	if rep := sync(); len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "never fires") || len(rep.Deleted) != 0 {
		t.Fatalf("bad trigger: %+v", rep)
	}
	// Triggers removed from the file, then the file itself: deleted.
	writeFile(t, filepath.Join(dir, "nightly.yaml"), "name: nightly\nsteps:\n  - id: a\n    exec: [\"true\"]\non:\n  - every: 5m\n")
	if rep := sync(); !slices.Equal(rep.Deleted, []string{"nightly:1", "nightly:2", "nightly:3"}) || !slices.Equal(rep.Updated, []string{"nightly:0"}) {
		t.Fatalf("removed triggers: %+v", rep)
	}
	if err := os.Remove(filepath.Join(dir, "nightly.yaml")); err != nil {
		t.Fatal(err)
	}
	if rep := sync(); !slices.Equal(rep.Deleted, []string{"nightly:0"}) || len(list()) != 0 {
		t.Fatalf("removed file: %+v, left %v", rep, list())
	}
}

func TestOneSchedulerLeadsAndAnotherTakesOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := t.TempDir()
	dir := filepath.Join(ws, ".cairn", "workflows")
	writeFile(t, filepath.Join(dir, "nightly.yaml"), nightlyYAML)
	st := memory.New()
	defer st.Close()
	locksDir := filepath.Join(t.TempDir(), "locks")
	newSched := func() *Scheduler {
		return New(Config{Store: st, LocksDir: locksDir, Targets: &WorkflowTargets{Dir: dir}, Workspace: ws, WorkflowsDir: dir, LockRetry: 20 * time.Millisecond, Check: 20 * time.Millisecond})
	}
	a, b := newSched(), newSched()
	sa, sb := watch(a), watch(b)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	sa.until(t, "a leads", a.Leading)
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	if err := b.Start(ctx); err == nil {
		t.Fatal("a second Start succeeded")
	}
	// The leader synced the workflow file on taking the lead.
	sa.until(t, "the triggers synced", func() bool {
		c, _ := st.Counts(ctx)
		return c.Automations == 4
	})
	if b.Leading() {
		t.Fatal("two schedulers lead")
	}
	a.Stop()
	a.Stop() // idempotent
	sb.until(t, "b takes over", b.Leading)
	// The new leader notices a changed file within Check.
	writeFile(t, filepath.Join(dir, "nightly.yaml"), "name: nightly\nsteps:\n  - id: a\n    exec: [\"true\"]\n")
	sb.until(t, "the removal synced", func() bool {
		c, _ := st.Counts(ctx)
		return c.Automations == 0
	})
}
