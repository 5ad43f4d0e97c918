package automations

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnhq/cairn/retention"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// TestOneSecondAutomationStaysBounded is issue 15's "a 1-second
// automation for 10 minutes with a retention of 2 minutes", fired by the
// scheduler on a fake clock over a SQLite file: each second the scheduler
// fires the automation (every 1s, measured from completion), the run is
// claimed and settled in the store as an engine would, with its journal
// (a file for half the runs, kept with the run for the others), and the
// retention loop collects 5 s after its start and then every 30 s on the
// same clock. Bounds: at most 2 minutes of runs plus one interval (151)
// in the store and in the output folder, the fire history at its cap, the
// database file under 1 MiB and its WAL under 5 MiB, the output folder
// under 64 KiB, and 600 fires.
func TestOneSecondAutomationStaysBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "state.sqlite3"), sqlite.Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	out := filepath.Join(dir, "output")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	e := setupStore(t, st)
	a := e.create(Spec{Key: "tick", Every: "1s"})

	type pass struct {
		rep retention.Report
		err error
	}
	passes := make(chan pass, 1)
	col := retention.NewCollector(retention.Options{Store: st, Journals: runs.JournalDir(out), Clock: e.clock,
		Policy: retention.Policy{MaxAge: 2 * time.Minute, KeepPerTarget: 1, KeepPerAutomation: 1}})
	loop := &retention.Loop{C: col, FirstDelay: 5 * time.Second, Interval: 30 * time.Second, OnCollect: func(r retention.Report, err error) { passes <- pass{r, err} }}
	if err := loop.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer loop.Stop()

	const (
		seconds  = 600
		maxRuns  = 2*60 + 30 + 1
		maxMain  = 1 << 20
		maxWAL   = 5 << 20 // SQLite checkpoints the WAL at 1,000 pages (4 MiB) and reuses the file
		maxFiles = 64 << 10
	)
	journal := []byte(`{"type":"text","step":"tick","text":"tick"}` + "\n")
	start := e.clock.Now()
	deleted, peakRuns, peakOut := 0, 0, int64(0)
	var peakMain, peakWAL int64
	for sec := 1; sec <= seconds; sec++ {
		at := start.Add(time.Duration(sec) * time.Second)
		e.advanceTo(at)
		state := e.get(a.ID).State
		if state.Fires != int64(sec) || !state.InFlight() {
			t.Fatalf("at %ds: %d fires, in flight %v; want a fire each second", sec, state.Fires, state.InFlight())
		}
		id := state.LastRunID
		claim := fmt.Sprintf("c%d", sec)
		if _, err := st.ClaimRun(e.ctx, store.ClaimParams{ID: id, Claim: claim, Now: at}); err != nil {
			t.Fatal(err)
		}
		settle := store.SettleParams{ID: id, Claim: claim, Status: store.RunSucceeded, Now: at}
		if sec%2 == 0 {
			if err := os.WriteFile(filepath.Join(out, id+".jsonl"), journal, 0o600); err != nil {
				t.Fatal(err)
			}
		} else {
			settle.Journal = journal
		}
		if _, err := st.SettleRun(e.ctx, settle); err != nil {
			t.Fatal(err)
		}
		if sec%30 == 5 {
			p := <-passes
			if p.err != nil {
				t.Fatal(p.err)
			}
			deleted += len(p.rep.Deleted)
		}
		c, err := st.Counts(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		files, outBytes := dirUsage(t, out)
		fires, err := st.ListFires(e.ctx, a.ID, 1000)
		if err != nil {
			t.Fatal(err)
		}
		main, wal := fileSize(t, st.Path()), fileSize(t, st.Path()+"-wal")
		peakRuns, peakOut = max(peakRuns, c.Runs, files), max(peakOut, outBytes)
		peakMain, peakWAL = max(peakMain, main), max(peakWAL, wal)
		if c.Runs > maxRuns || files > maxRuns || len(fires) > store.FireHistory || main > maxMain || wal > maxWAL || outBytes > maxFiles {
			t.Fatalf("at %ds: %d runs, %d journal files (%d bytes), %d fire rows, database %d bytes and WAL %d; bounds %d runs or files, %d fire rows, %d bytes of database, %d of WAL, %d of output",
				sec, c.Runs, files, outBytes, len(fires), main, wal, maxRuns, store.FireHistory, maxMain, maxWAL, maxFiles)
		}
	}
	t.Logf("%d fires: %d runs deleted by the loop; at most %d runs or journal files, database file at most %d bytes and its WAL %d, output folder at most %d bytes",
		seconds, deleted, peakRuns, peakMain, peakWAL, peakOut)
	if deleted < seconds-maxRuns {
		t.Fatalf("the loop deleted %d of %d runs", deleted, seconds)
	}
}

// dirUsage counts the files in dir and their bytes.
func dirUsage(t *testing.T, dir string) (int, int64) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, en := range entries {
		fi, err := en.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return len(entries), n
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
