package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
)

// riverJobs runs River's side of a throughput figure on driver, whatever
// the database: it migrates River's schema, starts a client with cfg and a
// no-op worker, inserts p.Jobs no-op jobs from p.Launchers goroutines and
// returns completed jobs per second, counted from the first insert to the
// last completion event (sent after the completer has committed it).
func riverJobs[TTx any](ctx context.Context, driver riverdriver.Driver[TTx], p throughputParams, cfg riverConfig) (float64, error) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: logger})
	if err != nil {
		return 0, fmt.Errorf("create river migrator: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return 0, fmt.Errorf("migrate river schema: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	client, err := river.NewClient(driver, &river.Config{
		Logger:            logger,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.MaxWorkers}},
		FetchCooldown:     cfg.FetchCooldown,
		FetchPollInterval: cfg.FetchPollInterval,
		Workers:           workers,
	})
	if err != nil {
		return 0, fmt.Errorf("create river client: %w", err)
	}
	events, cancelSub := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: p.Jobs + 1024,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed},
	})
	defer cancelSub()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := client.Start(runCtx); err != nil {
		return 0, fmt.Errorf("start river client: %w", err)
	}
	defer func() {
		stopCtx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		client.Stop(stopCtx)
	}()
	start := time.Now()
	insert := func() error {
		return parallel(runCtx, p.Jobs, p.Launchers, func(context.Context, int) error {
			_, err := client.Insert(runCtx, noopArgs{}, nil)
			return err
		})
	}
	return countCompletions(ctx, events, p, start, insert)
}

// countCompletions runs insert in the background and counts River's
// completion events until p.Jobs jobs completed, returning jobs per second
// since start. The caller cancels what insert uses when it returns early.
func countCompletions(ctx context.Context, events <-chan *river.Event, p throughputParams, start time.Time, insert func() error) (float64, error) {
	inserted := make(chan error, 1)
	go func() { inserted <- insert() }()
	deadline := time.NewTimer(p.Timeout)
	defer deadline.Stop()
	for done := 0; done < p.Jobs; {
		select {
		case ev := <-events:
			if ev.Kind != river.EventKindJobCompleted {
				return 0, fmt.Errorf("river job %d ended %s", ev.Job.ID, ev.Kind)
			}
			done++
		case err := <-inserted:
			if err != nil {
				return 0, fmt.Errorf("insert river job: %w", err)
			}
			inserted = nil
		case <-deadline.C:
			return 0, fmt.Errorf("river completed %d of %d jobs in %s", done, p.Jobs, p.Timeout)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	elapsed := time.Since(start)
	if inserted != nil {
		if err := <-inserted; err != nil {
			return 0, fmt.Errorf("insert river job: %w", err)
		}
	}
	return float64(p.Jobs) / elapsed.Seconds(), nil
}
