package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// TestFireQueriesUseIndexes: the queries of a batch of fires look rows up
// by key (only the batch's own rows are scanned), so a fire costs the
// same with 10 or 10,000 automations.
func TestFireQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	checkPlans(t, []string{"automations", "automation_fires", "runs"}, map[string]planCase{
		"automations":  {q: qFireAutomations},
		"last runs":    {q: qFireLastRuns},
		"existing":     {q: qFireExisting},
		"prune":        {q: qPruneFires},
		"prune many":   {q: qPruneFiresOf},
		"write state":  {q: qWriteState},
		"write states": {q: qWriteStates.q[1]},
		"list fires":   {q: qListFires},
	})
}

// BenchmarkFireMany commits the fires of 1,000 cron automations due at the
// same instant in one FireMany: the store's share of a scheduler's fire
// lag (figure 4 of BENCHMARKS.md).
func BenchmarkFireMany(b *testing.B) {
	const n = 1000
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "state.sqlite3"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	for i := range n {
		a := &store.Automation{ID: fmt.Sprintf("aut_%04d", i), Key: fmt.Sprintf("k%04d", i), Owner: "bench", Target: "noop",
			Trigger: store.AutomationTrigger{Kind: store.TriggerCron, Cron: "* * * * *", TZ: "UTC"}, Enabled: true, Overlap: store.OverlapAllow, CreatedAt: t0}
		if err := s.CreateAutomation(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
	literals := json.RawMessage(`{"version":1,"file":"/w/.cairn/workflows/noop.yaml","source":"name: noop\nsteps:\n  - id: a\n    exec: [\"true\"]\n","input":{}}`)
	b.ReportAllocs()
	b.ResetTimer()
	for k := range b.N {
		b.StopTimer()
		nominal := t0.Add(time.Duration(k+1) * time.Minute)
		ps := make([]store.FireParams, n)
		for i := range ps {
			id := fmt.Sprintf("aut_%04d", i)
			ps[i] = store.FireParams{AutomationID: id, Nominal: nominal, Actual: nominal, NextDue: nominal.Add(time.Minute),
				Run: &store.Run{ID: fmt.Sprintf("run_%d_%04d", k, i), Target: "noop", Input: json.RawMessage(`{}`), Literals: literals,
					Trigger: store.Trigger{Kind: "automation", AutomationID: id, Nominal: nominal}}}
		}
		b.StartTimer()
		outs, err := s.FireMany(ctx, ps)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range outs {
			if o.Err != nil || o.Result.AlreadyFired {
				b.Fatalf("fire: %+v", o)
			}
		}
	}
	b.ReportMetric(n, "fires/op")
}

// TestStateMemoIsPerStore: two stores in one process keep their own memo
// of decoded automation states.
func TestStateMemoIsPerStore(t *testing.T) {
	t.Parallel()
	a, b := newTestStore(t), newTestStore(t)
	defer a.Close()
	defer b.Close()
	if _, err := a.states.decode(`{"fires":3}`); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.states.m[`{"fires":3}`]; !ok {
		t.Fatal("the store did not remember the state it decoded")
	}
	if _, ok := b.states.m[`{"fires":3}`]; ok {
		t.Fatal("another store shares the memo")
	}
}
