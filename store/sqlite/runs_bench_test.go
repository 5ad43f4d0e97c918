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

// BenchmarkStepRunLifecycle measures the store side of a one-step run
// whose step runs, as the run engine writes it: created claimed, the
// step's start, then settled with its outcome (three operations), from 16
// goroutines, at both durability settings.
//
//	go test -run '^$' -bench StepRunLifecycle ./store/sqlite/
func BenchmarkStepRunLifecycle(b *testing.B) {
	literals := []byte(`{"version":1,"file":"step.yaml","source":"steps:\n  - id: tick\n    sleep: 1ns\n","input":{}}`)
	benchParallel(b, func(ctx context.Context, s *Store, id string) error {
		r := &store.Run{ID: id, Target: "step", Status: store.RunRunning, OwnerPID: 1, Claim: "c", Literals: literals, Trigger: store.Trigger{Kind: "manual"}}
		if err := s.CreateRun(ctx, r); err != nil {
			return err
		}
		if _, err := s.StartStep(ctx, store.StepStart{RunID: id, Claim: "c", Path: "tick", Position: 1, Kind: "sleep", PID: 1, Detail: []byte(`{"until":"2026-12-02T00:00:00Z"}`)}); err != nil {
			return err
		}
		_, err := s.SettleRun(ctx, store.SettleParams{ID: id, Claim: "c", Status: store.RunSucceeded, Journal: []byte(`{"type":"start"}` + "\n"),
			Ledger: []store.StepFinish{{Path: "tick", Position: 1, Kind: "sleep", Status: "succeeded", Result: []byte(`{}`)}}})
		return err
	})
}
