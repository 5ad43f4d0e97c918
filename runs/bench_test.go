package runs

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testws"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/sqlite"
)

// BenchmarkLaunchToSettle measures one run from Launch until it is
// settled, one at a time, for a one-step workflow: a step that runs
// `true`, and a step that does nothing external (its condition is false,
// so the engine only records the skip). The in-memory engine is the peer
// that shows what the SQLite store and the journal files cost.
//
//	go test -run XXX -bench . -benchtime 200x ./runs/
func BenchmarkLaunchToSettle(b *testing.B) {
	files := map[string]string{
		"exec.yaml": "steps:\n  - id: noop\n    exec: [\"true\"]\n",
		"skip.yaml": "steps:\n  - id: noop\n    if: ${{ false }}\n    exec: [\"true\"]\n",
	}
	for _, c := range []struct {
		name, target string
		inMemory     bool
	}{
		{"sqlite/exec-true", "exec", false},
		{"sqlite/no-op", "skip", false},
		{"memory/exec-true", "exec", true},
		{"memory/no-op", "skip", true},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := benchEngine(b, files, c.inMemory)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				r, err := e.Launch(ctx, LaunchParams{Target: c.target})
				if err != nil {
					b.Fatal(err)
				}
				done, err := e.WaitSettledOrParked(ctx, r.ID)
				if err != nil || done.Status != store.RunSucceeded {
					b.Fatalf("run: %v %v", done, err)
				}
			}
		})
	}
}

func benchEngine(b *testing.B, files map[string]string, inMemory bool) *Engine {
	b.Helper()
	return benchEngineSync(b, files, inMemory, "")
}

// benchEngineSync is benchEngine with the SQLite store's synchronous
// setting ("" is the default, FULL).
func benchEngineSync(b *testing.B, files map[string]string, inMemory bool, sync string) *Engine {
	b.Helper()
	ws := testws.New(b, files)
	var st store.Store = memory.New()
	if !inMemory {
		st = testws.Store(b, ws, sqlite.Options{Synchronous: sync})
	}
	e, err := New(Options{Store: st, Workspace: ws, InMemory: inMemory})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Stop)
	return e
}

// BenchmarkThroughput launches b.N one-step no-op runs (a step whose
// condition is false) from 16 goroutines and waits until every one has
// settled: the workload of figure 1 of BENCHMARKS.md, without River.
//
//	go test -run '^$' -bench Throughput -benchtime 2000x ./runs/
func BenchmarkThroughput(b *testing.B) {
	files := map[string]string{
		"noop.yaml": "steps:\n  - id: nothing\n    if: false\n    exec: [\"true\"]\n",
		"slow.yaml": "steps:\n  - id: hold\n    exec: [\"sleep\", \"20\"]\n    safe_to_repeat: true\n",
	}
	for _, c := range []struct {
		name     string
		sync     string
		inMemory bool
	}{
		{"sqlite-FULL", "FULL", false},
		{"sqlite-NORMAL", "NORMAL", false},
		{"memory", "", true},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := benchEngineSync(b, files, c.inMemory, c.sync)
			ctx := context.Background()
			if err := e.Start(ctx); err != nil { // the peer loop runs, as in mcp-host
				b.Fatal(err)
			}
			const launchers = 16
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for l := range launchers {
				n := b.N / launchers
				if l < b.N%launchers {
					n++
				}
				wg.Go(func() {
					for range n {
						if _, err := e.Launch(ctx, LaunchParams{Target: "noop"}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			for e.Executing() > 0 {
				time.Sleep(100 * time.Microsecond)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
		})
	}
}
