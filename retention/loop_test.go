package retention

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/store"
)

// TestLoopBoundsAOneSecondAutomation plays the issue's "1-second automation
// for 10 minutes with a retention of 2 minutes" on a fake clock: a settled
// run with a journal every second for 600 seconds, the loop collecting 5s
// after start and then every 30s. The runs and journal files never exceed
// 2 minutes of runs plus one interval (151), and the database stays
// under 1 MiB; the first pass after the retention age deletes.
func TestLoopBoundsAOneSecondAutomation(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(now)
	f := setupAt(t, Policy{MaxAge: 2 * time.Minute, KeepPerTarget: 1, KeepPerAutomation: 1}, clk)
	type pass struct {
		rep Report
		err error
	}
	passes := make(chan pass, 1)
	l := &Loop{C: f.c, FirstDelay: 5 * time.Second, Interval: 30 * time.Second, OnCollect: func(r Report, err error) { passes <- pass{r, err} }}
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	const bound = 2*60 + 30 + 1
	ctx := context.Background()
	deleted, maxRuns, maxBytes := 0, 0, int64(0)
	for sec := 1; sec <= 600; sec++ {
		clk.Advance(time.Second)
		at := clk.Now()
		id := fmt.Sprintf("run_%04d", sec)
		if err := f.st.CreateRun(ctx, &store.Run{ID: id, Target: "tick", Status: store.RunSucceeded, CreatedAt: at, FinishedAt: at,
			Trigger: store.Trigger{Kind: "automation", AutomationID: "aut_tick"}}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.journal(id), []byte(`{"type":"line","text":"tick"}`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if sec%30 == 5 {
			p := <-passes
			if p.err != nil {
				t.Fatal(p.err)
			}
			deleted += len(p.rep.Deleted)
		}
		c, err := f.st.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		files, err := os.ReadDir(f.out)
		if err != nil {
			t.Fatal(err)
		}
		maxRuns = max(maxRuns, c.Runs, len(files))
		maxBytes = max(maxBytes, fileSize(t, f.st.Path()))
		if c.Runs > bound || len(files) > bound {
			t.Fatalf("at %ds: %d runs and %d journal files, over the bound %d", sec, c.Runs, len(files), bound)
		}
	}
	t.Logf("600 runs: %d deleted by the loop; at most %d runs or journals, database at most %d bytes", deleted, maxRuns, maxBytes)
	if deleted < 600-bound || maxBytes > 1<<20 {
		t.Fatalf("deleted %d of 600 runs; database reached %d bytes", deleted, maxBytes)
	}
}

func TestLoopStopIsIdempotent(t *testing.T) {
	t.Parallel()
	l := &Loop{C: NewCollector(Options{Store: setup(t, DefaultPolicy()).st})}
	l.Stop() // before Start: nothing to stop
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.Stop()
	l.Stop()
}
