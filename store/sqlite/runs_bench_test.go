package sqlite

import (
	"context"
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
	benchParallel(b, func(ctx context.Context, s *Store, id string) error {
		r := &store.Run{ID: id, Target: "noop", Status: store.RunRunning, OwnerPID: 1, Claim: "c", Literals: literals, Trigger: store.Trigger{Kind: "manual"}}
		if err := s.CreateRun(ctx, r); err != nil {
			return err
		}
		_, err := s.SettleRun(ctx, store.SettleParams{ID: id, Claim: "c", Status: store.RunSucceeded, Journal: []byte(`{"type":"start"}` + "\n"),
			Ledger: []store.StepFinish{{Path: "nothing", Position: 1, Kind: "exec", Status: "skipped"}}})
		return err
	})
}
