package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/retention"
	"github.com/cairnhq/cairn/store"
)

func TestRetentionSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, config string
		want         retention.Policy
		interval     time.Duration
		wantErr      string
	}{
		{"defaults", "", retention.DefaultPolicy(), time.Hour, ""},
		{"every key", "retention:\n  max_age: 7d\n  keep_per_target: 3\n  keep_per_automation: 2\n  interval: 10m\n",
			retention.Policy{MaxAge: 7 * 24 * time.Hour, KeepPerTarget: 3, KeepPerAutomation: 2}, 10 * time.Minute, ""},
		{"go durations and off", "retention:\n  max_age: 36h\n  interval: 0\n",
			retention.Policy{MaxAge: 36 * time.Hour, KeepPerTarget: 100, KeepPerAutomation: 100}, 0, ""},
		{"keep forever", "retention:\n  max_age: 0\n", retention.Policy{KeepPerTarget: 100, KeepPerAutomation: 100}, time.Hour, ""},
		{"bad duration", "retention:\n  max_age: a month\n", retention.Policy{}, 0, `duration "a month"`},
		{"negative keep", "retention:\n  keep_per_target: -1\n", retention.Policy{}, 0, "retention.keep_per_target is -1"},
		{"automation keep zero", "retention:\n  keep_per_automation: 0\n", retention.Policy{}, 0, "retention.keep_per_automation is 0; use 1 or more"},
		{"interval too short", "retention:\n  interval: 5s\n", retention.Policy{}, 0, "retention.interval is 5s"},
		{"unknown key", "retention:\n  max_runs: 5\n", retention.Policy{}, 0, "max_runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := setup(t, tc.config)
			h, err := Open(context.Background(), cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Open = %v; want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if got := h.Settings.Retention.Policy(); got != tc.want {
				t.Fatalf("policy %+v, want %+v", got, tc.want)
			}
			if got := h.Settings.Retention.GCInterval(); got != tc.interval {
				t.Fatalf("interval %v, want %v", got, tc.interval)
			}
		})
	}
}

// TestStartedHostCollects: a started host deletes an old run and its
// journal a minute after start (on its clock), and keeps a waiting one.
func TestStartedHostCollects(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	cfg := setup(t, "retention:\n  max_age: 1d\n  keep_per_target: 0\n")
	cfg.Write, cfg.Clock = true, clk
	h := open(t, cfg)
	ctx := context.Background()
	old := start.Add(-48 * time.Hour)
	for _, r := range []*store.Run{
		{ID: "run_old", Target: "hello", Status: store.RunSucceeded, CreatedAt: old, FinishedAt: old},
		{ID: "run_waits", Target: "hello", Status: store.RunWaiting, CreatedAt: old},
	} {
		if err := h.Store.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	journal := filepath.Join(h.Workspace.OutputDir(), "run_old.jsonl")
	if err := os.WriteFile(journal, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	clk.Advance(retention.DefaultFirstDelay)
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The run goes first, its journal after it.
		_, err := h.Store.GetRun(ctx, "run_old")
		if _, ferr := os.Stat(journal); errors.Is(err, store.ErrNotFound) && os.IsNotExist(ferr) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the old run or its journal is still there 10s after the first pass was due: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := h.Store.GetRun(ctx, "run_waits"); err != nil {
		t.Fatalf("the waiting run: %v", err)
	}
}
