package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	_ "modernc.org/sqlite"
)

// riverConfig is how River is set up for figure 1: the settings that gave
// River its best throughput on SQLite in our trials (see riverTrial),
// so that the comparison is against River at its best, not its defaults.
type riverConfig struct {
	MaxWorkers        int
	FetchCooldown     time.Duration
	FetchPollInterval time.Duration
}

var riverBest = riverConfig{MaxWorkers: 500, FetchCooldown: 10 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond}

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
// into a River client working them, and returns completed jobs per second,
// counted from the first insert to the last completion River reports
// (a completion event is sent after the completer has committed it).
func riverThroughput(ctx context.Context, p throughputParams, cfg riverConfig) (float64, error) {
	db, err := sql.Open("sqlite", sqliteDSN(p.Dir+"/river.sqlite3", p.Synchronous))
	if err != nil {
		return 0, fmt.Errorf("open river database: %w", err)
	}
	defer db.Close()
	// riversqlite's documented requirement: one connection, since River
	// runs operations in parallel that SQLite would refuse with BUSY.
	db.SetMaxOpenConns(1)

	return riverJobs(ctx, riversqlite.New(db), p, cfg)
}

// riverTrial measures River under several configurations, to choose
// riverBest: the harness compares against River at its best.
func riverTrial(ctx context.Context, b *bench) int {
	configs := []riverConfig{
		{MaxWorkers: 100, FetchCooldown: 100 * time.Millisecond, FetchPollInterval: time.Second}, // River's defaults
		{MaxWorkers: 100, FetchCooldown: 10 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond},
		{MaxWorkers: 100, FetchCooldown: 1 * time.Millisecond, FetchPollInterval: 10 * time.Millisecond},
		{MaxWorkers: 500, FetchCooldown: 10 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond},
		{MaxWorkers: 20, FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 20 * time.Millisecond},
	}
	for _, sync := range []string{"FULL", "NORMAL"} {
		for i, c := range configs {
			for rep := range b.reps {
				dir, err := os.MkdirTemp(b.disk.Dir, "trial-")
				if err != nil {
					b.logf("%v", err)
					return 1
				}
				v, err := riverThroughput(ctx, throughputParams{Dir: dir, Synchronous: sync, Jobs: 2000, Launchers: 16, Timeout: 2 * time.Minute}, c)
				os.RemoveAll(dir)
				if err != nil {
					b.logf("%s config %d: %v", sync, i, err)
					continue
				}
				b.logf("%s  %-70s rep %d: %6.0f jobs/s", sync, c, rep+1, v)
			}
		}
	}
	return 0
}
