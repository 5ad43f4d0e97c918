package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/automations/schedule"
	"github.com/cairnhq/cairn/store"
)

// parallel runs fn(i) for i in [0, n) on workers goroutines and returns the
// first error. Many concurrent writes let the store's group commit batch
// them, which is how seeding 100,000 records stays quick.
func parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && err != context.Canceled {
		return err
	}
	return nil
}

// seedAutomations stores n enabled cron automations of noop, each due once
// a year at its own minute of January 1st (UTC), so that none fires while
// measured but the scheduler has every one of them to plan.
func seedAutomations(ctx context.Context, st store.AutomationStore, n int) error {
	now := time.Now().UTC()
	return parallel(ctx, n, 64, func(ctx context.Context, i int) error {
		a := &store.Automation{
			ID:      fmt.Sprintf("auto-seed-%06d", i),
			Key:     fmt.Sprintf("nightly-%06d", i),
			Owner:   "mcp:cairn-bench",
			Target:  "noop",
			Input:   json.RawMessage(`{}`),
			Trigger: store.AutomationTrigger{Kind: store.TriggerCron, Cron: fmt.Sprintf("%d %d 1 1 *", i%60, (i/60)%24), TZ: "UTC"},
			Enabled: true,
			Overlap: store.OverlapSkip,
			Missed:  string(schedule.MissedSkip),
			State:   store.AutomationState{Cursor: now},
		}
		if err := st.CreateAutomation(ctx, a); err != nil {
			return fmt.Errorf("seed automation %d: %w", i, err)
		}
		return nil
	})
}
