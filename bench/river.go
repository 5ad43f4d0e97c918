package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
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

// riverThroughput is River's side of figure 1: riverJobs with riversqlite
// on a fresh database in p.Dir, opened as store/sqlite opens its own,
// counting its commits.
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

	return riverJobs(ctx, riversqlite.New(db), p, cfg, func() int64 { return commitsOf(path) })
}
