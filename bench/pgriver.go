package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// pgRiverConfigs are the River settings figure 11 tries in every
// repetition; River's figure is the best of them, so that the comparison
// is against River at its best on this server, not its defaults.
var pgRiverConfigs = []riverConfig{
	{MaxWorkers: 100, FetchCooldown: 100 * time.Millisecond, FetchPollInterval: time.Second}, // River's defaults
	{MaxWorkers: 500, FetchCooldown: 10 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond},
	{MaxWorkers: 500, FetchCooldown: 1 * time.Millisecond, FetchPollInterval: 10 * time.Millisecond},
}

// pgServer is the PostgreSQL server figure 11 runs on: a fresh database
// per measurement, created and dropped through the admin URL.
type pgServer struct {
	admin *url.URL
	conn  *pgx.Conn
	seq   int
}

func openPGServer(ctx context.Context, raw string) (*pgServer, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parse CAIRN_TEST_POSTGRES: %w", err)
	}
	conn, err := pgx.Connect(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", u.Redacted(), err)
	}
	return &pgServer{admin: u, conn: conn}, nil
}

// fresh creates an empty database and returns its URL and a func that
// drops it.
func (s *pgServer) fresh(ctx context.Context, prefix string) (string, func(), error) {
	s.seq++
	name := fmt.Sprintf("cairn_bench_%s_%d_%d", prefix, time.Now().UnixNano()%1e9, s.seq)
	if _, err := s.conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u := *s.admin
	u.Path = "/" + name
	drop := func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s.conn.Exec(c, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	return u.String(), drop, nil
}

func (s *pgServer) close() { s.conn.Close(context.Background()) }

// serverVersion is the server's version string, for the report.
func (s *pgServer) serverVersion(ctx context.Context) string {
	var v string
	if err := s.conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "?"
	}
	return v
}

// riverPGThroughput is riverThroughput on PostgreSQL with riverpgxv5: the
// same no-op worker, p.Launchers goroutines inserting p.Jobs jobs, jobs
// per second from the first insert to the last completion event.
func riverPGThroughput(ctx context.Context, dbURL string, p throughputParams, cfg riverConfig) (float64, error) {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return 0, fmt.Errorf("open river pool: %w", err)
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
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
// since start.
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

// pgCommitP50 is the median time of one write transaction on the server
// at url, one after another on one connection (an UPDATE of one row and
// its COMMIT, which waits for the WAL flush): the rate of transactions
// that all update one row cannot exceed 1 / this.
func pgCommitP50(ctx context.Context, url string, d time.Duration) (float64, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE TABLE bench_commit (id int PRIMARY KEY, n bigint NOT NULL); INSERT INTO bench_commit VALUES (1, 0)"); err != nil {
		return 0, fmt.Errorf("create commit table: %w", err)
	}
	var lat []float64
	for start := time.Now(); time.Since(start) < d; {
		t := time.Now()
		if _, err := conn.Exec(ctx, "UPDATE bench_commit SET n = n + 1 WHERE id = 1"); err != nil {
			return 0, fmt.Errorf("commit: %w", err)
		}
		lat = append(lat, ms(time.Since(t)))
	}
	return percentile(lat, 50), nil
}

// lockWaits samples, every 10 ms until stop is called, the server's active
// backends on database dbURL's database, and returns the share of them
// waiting for a lock taken by an update of the run_changes counter row.
func lockWaits(ctx context.Context, admin, dbURL string) (stop func() (float64, error)) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var waiting, active int
	var err error
	go func() {
		defer close(done)
		u, perr := url.Parse(dbURL)
		if perr != nil {
			err = perr
			return
		}
		conn, cerr := pgx.Connect(ctx, admin)
		if cerr != nil {
			err = cerr
			return
		}
		defer conn.Close(context.Background())
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			var w, a int
			qerr := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE wait_event_type = 'Lock' AND query LIKE '%UPDATE run_changes%'), count(*)
				FROM pg_stat_activity WHERE datname = $1 AND state = 'active' AND pid <> pg_backend_pid()`, u.Path[1:]).Scan(&w, &a)
			if qerr == nil {
				waiting, active = waiting+w, active+a
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() (float64, error) {
		cancel()
		<-done
		if err != nil || active == 0 {
			return 0, err
		}
		return float64(waiting) / float64(active), nil
	}
}
