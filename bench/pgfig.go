package main

import (
	"context"
	"fmt"
	"os"
	"time"
)

// pgEnv names the PostgreSQL server figure 11 runs on (the tests' variable).
const pgEnv = "CAIRN_TEST_POSTGRES"

// figPostgres measures figure 11: run throughput of Cairn on the
// PostgreSQL store against River with riverpgxv5, on the same server,
// River at the best of pgRiverConfigs in each repetition, each side on a
// fresh database. Which side goes first alternates by repetition.
func figPostgres(ctx context.Context, b *bench) error {
	// Ours does about 60 runs/s here (see the limits): 2,000 runs and
	// three repetitions keep the figure near three minutes.
	p := throughputParams{Launchers: 16, Jobs: 2_000, Timeout: 3 * time.Minute}
	reps := min(b.reps, 3)
	commitFor := time.Second
	if b.short {
		p.Jobs, p.Timeout, commitFor = 200, time.Minute, 200*time.Millisecond
	}
	b.rec.declare(11, "ours / River (best setting), PostgreSQL", "×", atLeast(2))
	raw := os.Getenv(pgEnv)
	if raw == "" {
		b.rec.note(11, "Skipped: %s is not set. Run it on a throwaway server: `eval \"$(.ci/postgres.sh start /tmp/cairn-pg)\"`, then `cd bench && go run . -only 11`, then `.ci/postgres.sh stop /tmp/cairn-pg`.", pgEnv)
		b.logf("fig 11: skipped: %s is not set", pgEnv)
		return nil
	}
	srv, err := openPGServer(ctx, raw)
	if err != nil {
		return err
	}
	defer srv.close()
	b.rec.note(11, "PostgreSQL %s at %s. %s runs (jobs) per measurement, %d concurrent launchers (inserters), a fresh database for each measurement, %d repetitions; ours launches a one-step workflow whose step runs (an http GET to a server in the harness that answers 204 at once: its start and result recorded, no process forked) through runs.Engine on store/postgres (pgxpool of 32 connections), each run executed to succeeded; River inserts no-op jobs worked by a no-op worker (riverpgxv5 on a pgxpool) through the runner figure 1 uses; both rates are steady: completions between the 10th and the 90th percentile of completion times (ours: SettleRun returned; River: its completion event), divided by the time between them.", srv.serverVersion(ctx), srv.admin.Redacted(), count(p.Jobs), p.Launchers, reps)
	b.rec.note(11, "River's figure per repetition is the best of %d settings measured in it: %s.", len(pgRiverConfigs), riverConfigList(pgRiverConfigs))
	for rep := range reps {
		var ours, best float64
		oursFirst := rep%2 == 1
		for _, side := range []bool{oursFirst, !oursFirst} {
			if side {
				var ops float64
				var waits float64
				v, err := withFreshDB(ctx, srv, "ours", func(url string) (v float64, err error) {
					stop := lockWaits(ctx, raw, url)
					v, ops, err = oursPGThroughput(ctx, b, url, p)
					waits, _ = stop()
					return v, err
				})
				if err != nil {
					return fmt.Errorf("ours on PostgreSQL: %w", err)
				}
				ours = v
				b.rec.add(11, "diagnostic: ours, store write transactions per run", "", goal{}, ops)
				b.rec.add(11, "diagnostic: ours, store write transactions per second", "tx/s", goal{}, ops*v)
				b.rec.add(11, "diagnostic: ours, share of active server backends waiting for the run_changes row lock, which only readers take (sampled every 10 ms)", "%", goal{}, 100*waits)
				continue
			}
			for i, cfg := range pgRiverConfigs {
				v, err := withFreshDB(ctx, srv, "river", func(url string) (float64, error) { return riverPGThroughput(ctx, url, p, cfg) })
				if err != nil {
					return fmt.Errorf("river (%s): %w", cfg, err)
				}
				b.rec.add(11, fmt.Sprintf("River, setting %d", i+1), "jobs/s", goal{}, v)
				best = max(best, v)
			}
		}
		commit, err := withFreshDB(ctx, srv, "commit", func(url string) (float64, error) { return pgCommitP50(ctx, url, commitFor) })
		if err != nil {
			return fmt.Errorf("commit latency: %w", err)
		}
		b.rec.add(11, "diagnostic: one write transaction on this server p50 (UPDATE of one row, one after another)", "ms", goal{}, commit)
		b.rec.add(11, "ours / River (best setting), PostgreSQL", "×", atLeast(2), ours/best)
		b.rec.add(11, "ours, PostgreSQL", "runs/s", goal{}, ours)
		b.rec.add(11, "River at its best setting, PostgreSQL", "jobs/s", goal{}, best)
		b.logf("fig 11: rep %d: ours %.0f runs/s, River best %.0f jobs/s (%.2f×)", rep+1, ours, best, ours/best)
	}
	return nil
}

// withFreshDB runs measure on a new database of srv and drops it after.
func withFreshDB(ctx context.Context, srv *pgServer, prefix string, measure func(url string) (float64, error)) (float64, error) {
	url, drop, err := srv.fresh(ctx, prefix)
	if err != nil {
		return 0, err
	}
	defer drop()
	return measure(url)
}

func riverConfigList(cs []riverConfig) string {
	s := ""
	for i, c := range cs {
		if i > 0 {
			s += "; "
		}
		s += fmt.Sprintf("%d: %s", i+1, c)
	}
	return s
}
