package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
)

// riverJobs runs River's side of a throughput figure on driver, whatever
// the database (SQLite for figure 1, PostgreSQL for figure 11): it
// migrates River's schema, starts a client with cfg and a no-op worker,
// inserts p.Jobs no-op jobs from p.Launchers goroutines and measures the
// steady rate of the completions River reports (a completion event is
// sent after the completer has committed it; see completions). commits,
// when not nil, is the database's commit count so far; the result's
// Commits is then the commits per job.
func riverJobs[TTx any](ctx context.Context, driver riverdriver.Driver[TTx], p throughputParams, cfg riverConfig, commits func() int64) (tpResult, error) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: logger})
	if err != nil {
		return tpResult{}, fmt.Errorf("create river migrator: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return tpResult{}, fmt.Errorf("migrate river schema: %w", err)
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
		return tpResult{}, fmt.Errorf("create river client: %w", err)
	}
	events, cancelSub := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: p.Jobs + 1024,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed},
	})
	defer cancelSub()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := client.Start(runCtx); err != nil {
		return tpResult{}, fmt.Errorf("start river client: %w", err)
	}
	defer func() {
		stopCtx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		client.Stop(stopCtx)
	}()

	var commits0 int64
	if commits != nil {
		commits0 = commits()
	}
	done := newCompletions(p.Jobs)
	done.begin()
	insert := func() error {
		return parallel(runCtx, p.Jobs, p.Launchers, func(context.Context, int) error {
			if _, err := client.Insert(runCtx, noopArgs{}, nil); err != nil {
				return fmt.Errorf("insert river job: %w", err)
			}
			return nil
		})
	}
	if err := countCompletions(ctx, cancel, events, p, done, insert); err != nil {
		return tpResult{}, err
	}
	var res tpResult
	if commits != nil {
		res.Commits = float64(commits()-commits0) / float64(p.Jobs)
	}
	if res.Rate, err = done.steadyRate(); err != nil {
		return tpResult{}, err
	}
	return res, nil
}

// countCompletions runs insert in the background and marks River's
// completion events in done until p.Jobs jobs completed. On an early
// return it cancels what insert uses (cancel) and waits for insert.
func countCompletions(ctx context.Context, cancel context.CancelFunc, events <-chan *river.Event, p throughputParams, done *completions, insert func() error) error {
	// inserted gets the inserts' outcome; it is nil once received.
	inserted := make(chan error, 1)
	go func() { inserted <- insert() }()
	waitInserts := func() {
		if inserted != nil {
			<-inserted
		}
	}
	deadline := time.NewTimer(p.Timeout)
	defer deadline.Stop()
	n := 0
	for n < p.Jobs {
		select {
		case ev := <-events:
			if ev.Kind != river.EventKindJobCompleted {
				cancel()
				waitInserts()
				return fmt.Errorf("river job %d ended %s", ev.Job.ID, ev.Kind)
			}
			done.mark()
			n++
		case err := <-inserted:
			inserted = nil
			if err != nil {
				cancel()
				return err
			}
		case <-deadline.C:
			cancel()
			waitInserts()
			return fmt.Errorf("river completed %d of %d jobs in %s", n, p.Jobs, p.Timeout)
		case <-ctx.Done():
			cancel()
			waitInserts()
			return ctx.Err()
		}
	}
	waitInserts()
	if n == 0 {
		return errors.New("river completed no job")
	}
	return nil
}
