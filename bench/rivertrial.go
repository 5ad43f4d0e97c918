package main

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// riverBest measures River at sync under each of riverConfigs, once
// each with p's jobs, prints the trial as a table of figure 1 (one row
// per setting) and returns the setting with the highest steady rate.
func riverBest(ctx context.Context, b *bench, p throughputParams, sync string) (riverConfig, error) {
	best, bestRate := riverConfig{}, 0.0
	var t strings.Builder
	fmt.Fprintf(&t, "River's settings trial at `synchronous=%s` (%s jobs each, steady rate):\n\n", sync, count(p.Jobs))
	t.WriteString("| River setting | jobs/s | commits per job |\n| --- | --- | --- |\n")
	for i, c := range riverConfigs {
		dir, err := os.MkdirTemp(b.disk.Dir, "trial-")
		if err != nil {
			return riverConfig{}, err
		}
		q := p
		q.Dir, q.Synchronous = dir, sync
		r, err := riverThroughput(ctx, q, c)
		os.RemoveAll(dir)
		if err != nil {
			return riverConfig{}, fmt.Errorf("river trial at %s, %s: %w", sync, c, err)
		}
		name := c.String()
		if i == 0 {
			name += " (River's defaults)"
		}
		fmt.Fprintf(&t, "| %s | %s | %s |\n", name, formatValue(r.Rate, ""), formatValue(r.Commits, ""))
		b.logf("fig 1: River trial %s  %-70s %6.0f jobs/s", sync, c, r.Rate)
		if r.Rate > bestRate {
			best, bestRate = c, r.Rate
		}
	}
	b.rec.table(1, t.String())
	b.rec.note(1, "River's best setting at %s in the trial: %s (%s jobs/s); the %s measurements use it.", sync, best, formatValue(bestRate, ""), sync)
	return best, nil
}

// riverTrial is -river-trial: River's settings trial alone, at full size.
func riverTrial(ctx context.Context, b *bench) int {
	p := throughputParams{Launchers: 16, Jobs: 10000, Timeout: timeoutFor(10000)}
	if b.short {
		p.Jobs, p.Timeout = 200, timeoutFor(200)
	}
	for _, sync := range syncModes {
		if _, err := riverBest(ctx, b, p, sync); err != nil {
			b.logf("%v", err)
			return 1
		}
	}
	return 0
}
