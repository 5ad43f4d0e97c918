package retention

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// fixture is a SQLite store and an output folder under t.TempDir().
type fixture struct {
	st  *sqlite.Store
	out string
	c   *Collector
}

func setup(t *testing.T, p Policy) *fixture { return setupAt(t, p, clock.NewFake(now)) }

func setupAt(t *testing.T, p Policy, clk clock.Clock) *fixture {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "state.sqlite3"), sqlite.Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	out := filepath.Join(dir, "output")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	return &fixture{st: st, out: out, c: NewCollector(Options{Store: st, Policy: p, Journals: runs.JournalDir(out), Clock: clk})}
}

// insert creates runs from many goroutines, so the store's group commit
// writes them in few transactions. Runs whose id ends in 0 get a journal
// file (creating 10,000 files costs more than the whole gc).
func (f *fixture) insert(t *testing.T, list []*store.Run) {
	t.Helper()
	const writers = 256
	ctx := context.Background()
	pad := json.RawMessage(`{"pad":"` + strings.Repeat("x", 500) + `"}`)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < len(list); i += writers {
				r := list[i]
				r.Input, r.Literals = pad, pad
				if err := f.st.CreateRun(ctx, r); err != nil {
					errs <- err
					return
				}
				if !hasJournal(r.ID) {
					continue
				}
				if err := os.WriteFile(f.journal(r.ID), []byte(`{"type":"line","text":"hello"}`+"\n"), 0o600); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func hasJournal(id string) bool { return strings.HasSuffix(id, "0") }

func (f *fixture) journal(id string) string { return filepath.Join(f.out, id+".jsonl") }

func (f *fixture) pages(t *testing.T) int64 {
	t.Helper()
	var n int64
	if err := f.st.Reader().QueryRow("SELECT page_count FROM pragma_page_count").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// countByTarget counts the stored runs of each target, and the active ones.
func (f *fixture) countByTarget(t *testing.T) (map[string]int, int) {
	t.Helper()
	by, active := map[string]int{}, 0
	cursor := ""
	for {
		page, next, err := f.st.ListRuns(context.Background(), store.RunFilter{Limit: store.MaxListLimit, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			by[r.Target]++
			if !r.Status.Settled() {
				active++
			}
		}
		if next == "" {
			return by, active
		}
		cursor = next
	}
}

// TestCollectTenThousandRuns: 10,000 runs, then one gc with the default
// policy.
//   - target "a": 4,000 runs 60 days old, every 100th queued, running or
//     waiting (40): the newest 100 (one of them active) and the other 39
//     active ones stay, 3,861 go.
//   - target "b": 3,000 old runs fired by two automations in turn: the
//     newest 100 of the target and of each automation stay (200), 2,800 go.
//   - target "c": 3,000 runs a day old: all stay.
func TestCollectTenThousandRuns(t *testing.T) {
	t.Parallel()
	f := setup(t, DefaultPolicy())
	old := now.Add(-60 * 24 * time.Hour)
	var list []*store.Run
	active := []store.RunStatus{store.RunQueued, store.RunRunning, store.RunWaiting}
	for i := range 4000 {
		at := old.Add(time.Duration(i) * time.Second)
		r := &store.Run{ID: fmt.Sprintf("run_a_%05d", i), Target: "a", Status: store.RunSucceeded, CreatedAt: at, FinishedAt: at}
		if i%100 == 0 {
			r.Status, r.FinishedAt = active[i/100%3], time.Time{}
		}
		list = append(list, r)
	}
	for i := range 3000 {
		at := old.Add(time.Duration(i) * time.Second)
		auto := []string{"aut_1", "aut_2"}[i%2]
		list = append(list, &store.Run{ID: fmt.Sprintf("run_b_%05d", i), Target: "b", Status: store.RunFailed, CreatedAt: at, FinishedAt: at,
			Trigger: store.Trigger{Kind: "automation", AutomationID: auto}})
	}
	for i := range 3000 {
		at := now.Add(-24 * time.Hour).Add(time.Duration(i) * time.Second)
		list = append(list, &store.Run{ID: fmt.Sprintf("run_c_%05d", i), Target: "c", Status: store.RunSucceeded, CreatedAt: at, FinishedAt: at})
	}
	start := time.Now()
	f.insert(t, list)
	t.Logf("inserted %d runs with journals in %v", len(list), time.Since(start))
	pagesBefore := f.pages(t)
	fileBefore := fileSize(t, f.st.Path())

	dry, err := f.c.Collect(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := f.st.Counts(context.Background()); dry.Examined != 10000 || len(dry.Deleted) != 6661 || c.Runs != 10000 || dry.Journals != 0 {
		t.Fatalf("dry run: examined %d, would delete %d, %d runs left, %d journals removed", dry.Examined, len(dry.Deleted), c.Runs, dry.Journals)
	}

	start = time.Now()
	rep, err := f.c.Collect(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gc deleted %d runs and %d journals (%d bytes) in %v; space %+v", len(rep.Deleted), rep.Journals, rep.JournalBytes, time.Since(start), rep.Space)
	journals := 0
	for _, id := range rep.Deleted {
		if hasJournal(id) {
			journals++
		}
	}
	if len(rep.Deleted) != 6661 || rep.Journals != journals || journals < 600 {
		t.Fatalf("deleted %d runs and %d journals, want 6661 and %d", len(rep.Deleted), rep.Journals, journals)
	}
	by, activeLeft := f.countByTarget(t)
	if by["a"] != 139 || by["b"] != 200 || by["c"] != 3000 || activeLeft != 40 {
		t.Fatalf("left by target %v, %d active; want a:139 b:200 c:3000, 40 active", by, activeLeft)
	}
	for _, id := range rep.Deleted {
		if _, err := os.Stat(f.journal(id)); !os.IsNotExist(err) {
			t.Fatalf("journal of deleted run %s: %v", id, err)
		}
	}
	for _, id := range []string{"run_a_00000", "run_a_03990", "run_b_02990", "run_c_00000"} {
		if _, err := f.st.GetRun(context.Background(), id); err != nil {
			t.Fatalf("kept run %s: %v", id, err)
		}
		if _, err := os.Stat(f.journal(id)); err != nil {
			t.Fatalf("journal of kept run %s: %v", id, err)
		}
	}
	pagesAfter, fileAfter := f.pages(t), fileSize(t, f.st.Path())
	t.Logf("database: %d pages (%d bytes) before, %d pages (%d bytes) after", pagesBefore, fileBefore, pagesAfter, fileAfter)
	if rep.Space == nil || rep.Space.Method != "incremental_vacuum" || pagesAfter >= pagesBefore*2/3 || fileAfter >= fileBefore*2/3 {
		t.Fatalf("the database did not shrink: %d -> %d pages, %d -> %d bytes (space %+v)", pagesBefore, pagesAfter, fileBefore, fileAfter, rep.Space)
	}

	// A second pass finds nothing more to do.
	again, err := f.c.Collect(context.Background(), false)
	if err != nil || len(again.Deleted) != 0 || again.Space != nil {
		t.Fatalf("second gc: %+v, %v", again, err)
	}
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestDeleteByHand(t *testing.T) {
	t.Parallel()
	f := setup(t, DefaultPolicy())
	f.insert(t, []*store.Run{
		{ID: "run_done0", Target: "a", Status: store.RunSucceeded, CreatedAt: now, FinishedAt: now},
		{ID: "run_wait0", Target: "a", Status: store.RunWaiting, CreatedAt: now},
	})
	got, rep, err := f.c.Delete(context.Background(), []string{"run_done0", "run_wait0", "run_none"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Deleted, ",") != "run_done0" || strings.Join(got.Active, ",") != "run_wait0" || strings.Join(got.Missing, ",") != "run_none" || rep.Journals != 1 {
		t.Fatalf("delete: %+v, report %+v", got, rep)
	}
	if _, err := os.Stat(f.journal("run_done0")); !os.IsNotExist(err) {
		t.Fatalf("journal of the deleted run: %v", err)
	}
	if _, err := os.Stat(f.journal("run_wait0")); err != nil {
		t.Fatalf("journal of the waiting run: %v", err)
	}
}
