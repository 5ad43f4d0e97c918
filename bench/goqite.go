package main

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"maragu.dev/goqite"
)

// goqiteSchema is goqite v0.4.0's schema_sqlite.sql, verbatim (the module
// ships it as a file and leaves creating it to the user).
const goqiteSchema = `create table goqite (
  id text primary key default ('m_' || lower(hex(randomblob(16)))),
  created text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  updated text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  queue text not null,
  body blob not null,
  timeout text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  received integer not null default 0,
  priority integer not null default 0
) strict;

create trigger goqite_updated_timestamp after update on goqite begin
  update goqite set updated = strftime('%Y-%m-%dT%H:%M:%fZ') where id = old.id;
end;

create index goqite_queue_priority_created_idx on goqite (queue, priority desc, created);`

// goqiteWorkers and goqitePoll are how figure 1 works goqite's queue:
// that many goroutines each receive a message (waiting up to goqitePoll
// between empty polls), do nothing, and delete it, as goqite's job runner
// does with a no-op job; the delete commits the job's completion.
const (
	goqiteWorkers = 16
	goqitePoll    = time.Millisecond
)

// goqiteThroughput sends p.Jobs messages from p.Launchers goroutines into
// a goqite queue on the same SQLite, driver, disk and pragmas as ours,
// works them with no-op workers, and measures the steady rate of
// completions (a completion: the message's delete committed).
func goqiteThroughput(ctx context.Context, p throughputParams) (tpResult, error) {
	path := p.Dir + "/goqite.sqlite3"
	db, err := sql.Open("sqlite", sqliteDSN(path, p.Synchronous))
	if err != nil {
		return tpResult{}, fmt.Errorf("open goqite database: %w", err)
	}
	defer db.Close()
	// As goqite's README sets it up for SQLite: one connection (one
	// writer at a time; others would get SQLITE_BUSY).
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, goqiteSchema); err != nil {
		return tpResult{}, fmt.Errorf("create goqite schema: %w", err)
	}
	q := goqite.New(goqite.NewOpts{DB: db, Name: "bench"})

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	commits0 := commitsOf(path)
	done := newCompletions(p.Jobs)
	left := make(chan struct{}, p.Jobs) // one token per job still to complete
	for range p.Jobs {
		left <- struct{}{}
	}
	done.begin()
	var wg sync.WaitGroup
	for range goqiteWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				m, err := q.ReceiveAndWait(runCtx, goqitePoll)
				if err != nil {
					if runCtx.Err() == nil {
						cancel(fmt.Errorf("receive goqite message: %w", err))
					}
					return
				}
				if err := q.Delete(context.WithoutCancel(runCtx), m.ID); err != nil {
					cancel(fmt.Errorf("delete goqite message: %w", err))
					return
				}
				done.mark()
				select {
				case <-left:
				default:
				}
				if len(left) == 0 {
					cancel(nil)
				}
			}
		}()
	}
	sendErr := parallel(runCtx, p.Jobs, p.Launchers, func(context.Context, int) error {
		if err := q.Send(runCtx, goqite.Message{Body: []byte("noop")}); err != nil {
			return fmt.Errorf("send goqite message: %w", err)
		}
		return nil
	})
	select {
	case <-runCtx.Done():
	case <-time.After(p.Timeout):
		cancel(fmt.Errorf("goqite completed %d of %d jobs in %s", p.Jobs-len(left), p.Jobs, p.Timeout))
	}
	wg.Wait()
	if err := context.Cause(runCtx); err != nil && err != context.Canceled {
		return tpResult{}, err
	}
	if sendErr != nil {
		return tpResult{}, sendErr
	}
	if ctx.Err() != nil {
		return tpResult{}, ctx.Err()
	}
	res := tpResult{Commits: float64(commitsOf(path)-commits0) / float64(p.Jobs)}
	if res.Rate, err = done.steadyRate(); err != nil {
		return tpResult{}, err
	}
	return res, nil
}
