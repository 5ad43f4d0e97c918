package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite"
)

// riverConfig is how River is set up for figure 1: figure 1 tries each
// of riverConfigs and compares against the best, per sync mode, so that
// the comparison is against River at its best, not its defaults.
type riverConfig struct {
	MaxWorkers        int
	FetchCooldown     time.Duration
	FetchPollInterval time.Duration
}

// riverConfigs are the settings figure 1 tries: River's defaults first.
var riverConfigs = []riverConfig{
	{MaxWorkers: 100, FetchCooldown: 100 * time.Millisecond, FetchPollInterval: time.Second}, // River's defaults
	{MaxWorkers: 100, FetchCooldown: 10 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond},
	{MaxWorkers: 100, FetchCooldown: 1 * time.Millisecond, FetchPollInterval: 10 * time.Millisecond},
	{MaxWorkers: 500, FetchCooldown: 10 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond},
	{MaxWorkers: 20, FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 20 * time.Millisecond},
}

func (c riverConfig) String() string {
	return fmt.Sprintf("MaxWorkers %d, FetchCooldown %s, FetchPollInterval %s", c.MaxWorkers, c.FetchCooldown, c.FetchPollInterval)
}

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// sqliteDSN opens path the way store/sqlite opens its write connection:
// WAL, the given synchronous level, a busy timeout, immediate transactions.
func sqliteDSN(path, synchronous string) string {
	return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(" + synchronous + ")&_txlock=immediate"
}

// throughputParams is one throughput measurement.
type throughputParams struct {
	Dir         string // a fresh folder for the database
	Synchronous string // FULL or NORMAL
	Jobs        int    // total jobs or runs
	Launchers   int    // concurrent inserters or launchers
	Timeout     time.Duration
}

// riverThroughput inserts p.Jobs no-op jobs from p.Launchers goroutines
// into a River client working them, and measures the steady rate of
// completions River reports (a completion event is sent after the
// completer has committed it; see completions).
func riverThroughput(ctx context.Context, p throughputParams, cfg riverConfig) (tpResult, error) {
	path := p.Dir + "/river.sqlite3"
	db, err := sql.Open("sqlite", sqliteDSN(path, p.Synchronous))
	if err != nil {
		return tpResult{}, fmt.Errorf("open river database: %w", err)
	}
	defer db.Close()
	// riversqlite's documented requirement: one connection, since River
	// runs operations in parallel that SQLite would refuse with BUSY.
	db.SetMaxOpenConns(1)

	driver := riversqlite.New(db)
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

	commits0 := commitsOf(path)
	done := newCompletions(p.Jobs)
	done.begin()
	// inserted gets the inserts' outcome; it is nil once received.
	inserted := make(chan error, 1)
	go func() {
		inserted <- parallel(runCtx, p.Jobs, p.Launchers, func(context.Context, int) error {
			if _, err := client.Insert(runCtx, noopArgs{}, nil); err != nil {
				return fmt.Errorf("insert river job: %w", err)
			}
			return nil
		})
	}()
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
				return tpResult{}, fmt.Errorf("river job %d ended %s", ev.Job.ID, ev.Kind)
			}
			done.mark()
			n++
		case err := <-inserted:
			inserted = nil
			if err != nil {
				cancel()
				return tpResult{}, err
			}
		case <-deadline.C:
			cancel()
			waitInserts()
			return tpResult{}, fmt.Errorf("river completed %d of %d jobs in %s", n, p.Jobs, p.Timeout)
		case <-ctx.Done():
			return tpResult{}, ctx.Err()
		}
	}
	waitInserts()
	if n == 0 {
		return tpResult{}, errors.New("river completed no job")
	}
	res := tpResult{Commits: float64(commitsOf(path)-commits0) / float64(p.Jobs)}
	if res.Rate, err = done.steadyRate(); err != nil {
		return tpResult{}, err
	}
	return res, nil
}
