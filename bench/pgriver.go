package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
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

// riverPGThroughput is River's side of figure 11: riverJobs with
// riverpgxv5 on a pgxpool of the database at dbURL; jobs per second in
// the steady state, as in figure 1.
func riverPGThroughput(ctx context.Context, dbURL string, p throughputParams, cfg riverConfig) (float64, error) {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return 0, fmt.Errorf("open river pool: %w", err)
	}
	defer pool.Close()
	r, err := riverJobs(ctx, riverpgxv5.New(pool), p, cfg, nil)
	return r.Rate, err
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
// waiting for a lock taken by an update of the run_changes row (readers
// numbering committed changes take it; writers no longer do).
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
