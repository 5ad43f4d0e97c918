package retention

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// TestCollectSweepsOrphanJournals: a journal or an output-file folder
// whose run is gone is removed once it is older than orphanAge; a young
// one, and one whose run exists, stay.
func TestCollectSweepsOrphanJournals(t *testing.T) {
	t.Parallel()
	f := setup(t, DefaultPolicy())
	f.insert(t, []*store.Run{{ID: "run_kept0", Target: "a", Status: store.RunSucceeded, CreatedAt: now, FinishedAt: now}})
	for id, age := range map[string]time.Duration{"run_kept0": 2 * orphanAge, "run_gone": 2 * orphanAge, "run_young": orphanAge / 2} {
		if id != "run_kept0" {
			if err := os.WriteFile(f.journal(id), []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(f.journal(id), now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	// Output-file folders (output: file): run_gone's goes with its
	// journal, counted once; run_folder's is all that is left of its run.
	for _, id := range []string{"run_gone", "run_folder"} {
		dir := filepath.Join(f.out, id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "step.1.log"), []byte("output\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dir, now.Add(-2*orphanAge), now.Add(-2*orphanAge)); err != nil {
			t.Fatal(err)
		}
	}
	dry, err := f.c.Collect(context.Background(), true)
	if err != nil || dry.Orphans != 2 {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	if _, err := os.Stat(f.journal("run_gone")); err != nil {
		t.Fatalf("a dry run removed an orphan: %v", err)
	}
	rep, err := f.c.Collect(context.Background(), false)
	if err != nil || rep.Orphans != 2 || rep.Journals != 2 || len(rep.Deleted) != 0 {
		t.Fatalf("collect: %+v, %v", rep, err)
	}
	for _, id := range []string{"run_gone", "run_folder"} {
		if _, err := os.Stat(filepath.Join(f.out, id)); !os.IsNotExist(err) {
			t.Errorf("output folder of %s: %v; want it removed", id, err)
		}
	}
	for id, want := range map[string]bool{"run_gone": false, "run_young": true, "run_kept0": true} {
		if _, err := os.Stat(f.journal(id)); (err == nil) != want {
			t.Errorf("journal %s: %v; want kept %v", id, err, want)
		}
	}
}
