package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn/store"
)

// BenchmarkRunLifecycle measures the store side of a one-step run whose
// step is skipped, as the run engine writes it: created claimed, then
// settled with the skipped step's outcome (two operations), from 16
// goroutines, at both durability settings.
//
//	go test -run '^$' -bench RunLifecycle ./store/sqlite/
func BenchmarkRunLifecycle(b *testing.B) {
	literals := []byte(`{"version":1,"file":"noop.yaml","source":"steps:\n  - id: nothing\n    if: false\n    exec: [\"true\"]\n","input":{}}`)
	for _, sync := range []string{"FULL", "NORMAL"} {
		b.Run(sync, func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "state.sqlite3"), Options{Synchronous: sync})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(8) // 16 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := fmt.Sprintf("run_%d", n.Add(1))
					r := &store.Run{ID: id, Target: "noop", Status: store.RunRunning, OwnerPID: 1, Claim: "c", Literals: literals, Trigger: store.Trigger{Kind: "manual"}}
					if err := s.CreateRun(ctx, r); err != nil {
						b.Error(err)
						return
					}
					_, err := s.SettleRun(ctx, store.SettleParams{ID: id, Claim: "c", Status: store.RunSucceeded, Journal: []byte(`{"type":"start"}` + "\n"),
						Ledger: []store.StepFinish{{Path: "nothing", Position: 1, Kind: "exec", Status: "skipped"}}})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
