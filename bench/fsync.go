package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// fsyncBlock is what one durable commit writes at least: one 4 KiB page.
const fsyncBlock = 4 << 10

// figFsync measures figure 9: the disk's ceiling for durable commits,
// measured the way SQLite's WAL is written: each commit appends new
// frames at the end of a growing file and fsyncs it, so every fsync also
// carries the file's new size and newly allocated blocks (the journal of
// the filesystem), not only the data. Overwriting blocks already
// allocated, the cheaper case, is kept as a diagnostic row.
func figFsync(ctx context.Context, b *bench) error {
	dur := time.Second
	if b.short {
		dur = 100 * time.Millisecond
	}
	b.rec.declare(9, "append 4 KiB + fsync", "ops/s", goal{})
	b.rec.note(9, "Each repetition appends 4 KiB to the end of a new file in %s and calls fsync, for %s, so the file grows by one block per commit as a WAL does between checkpoints. The diagnostic overwrites the 256 blocks of a preallocated 1 MiB file round-robin instead (no allocation, no size change).", b.disk.Dir, dur)
	for rep := range b.reps {
		if err := ctx.Err(); err != nil {
			return err
		}
		path := filepath.Join(b.disk.Dir, fmt.Sprintf("fsync-%d", rep))
		lat, elapsed, err := fsyncLoop(path, dur, false)
		if err != nil {
			return err
		}
		b.rec.add(9, "append 4 KiB + fsync", "ops/s", goal{}, float64(len(lat))/elapsed.Seconds())
		b.rec.add(9, "latency p50", "ms", goal{}, percentile(lat, 50))
		b.rec.add(9, "latency p99", "ms", goal{}, percentile(lat, 99))
		over, overElapsed, err := fsyncLoop(path, dur, true)
		if err != nil {
			return err
		}
		b.rec.add(9, "diagnostic: overwrite 4 KiB + fsync (allocated blocks)", "ops/s", goal{}, float64(len(over))/overElapsed.Seconds())
		b.rec.add(9, "diagnostic: overwrite latency p50", "ms", goal{}, percentile(over, 50))
		b.logf("fig 9: rep %d: %d appending fsyncs in %s (p50 %.3f ms), %d overwriting (p50 %.3f ms)", rep+1, len(lat), elapsed.Round(time.Millisecond), percentile(lat, 50), len(over), percentile(over, 50))
	}
	return nil
}

// fsyncP50 measures the median latency of appending 4 KiB and fsyncing,
// for d, in dir: the floor of one durable commit, for figures whose goal is
// stated against it in the same run.
func fsyncP50(dir string, d time.Duration) (float64, error) {
	lat, _, err := fsyncLoop(filepath.Join(dir, "fsync-floor"), d, false)
	if err != nil {
		return 0, err
	}
	return percentile(lat, 50), nil
}

// fsyncLoop writes 4 KiB blocks to a new file at path and fsyncs after
// each, for d, and returns each write+fsync's latency in ms. Appending
// (overwrite false) writes each block after the last; overwrite writes the
// 256 blocks of a preallocated, synced 1 MiB file round-robin. The file is
// removed at the end.
func fsyncLoop(path string, d time.Duration, overwrite bool) ([]float64, time.Duration, error) {
	const slots = 256
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("create %s: %w", path, err)
	}
	defer os.Remove(path)
	fail := func(what string, err error) ([]float64, time.Duration, error) {
		f.Close()
		return nil, 0, fmt.Errorf("%s %s: %w", what, path, err)
	}
	buf := make([]byte, fsyncBlock)
	for i := range buf {
		buf[i] = byte(i)
	}
	if overwrite {
		for i := range slots {
			if _, err := f.WriteAt(buf, int64(i*fsyncBlock)); err != nil {
				return fail("preallocate", err)
			}
		}
	}
	if err := f.Sync(); err != nil {
		return fail("sync", err)
	}
	var lat []float64
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		off := int64(i) * fsyncBlock
		if overwrite {
			off = int64(i%slots) * fsyncBlock
		}
		t := time.Now()
		buf[0] = byte(i)
		if _, err := f.WriteAt(buf, off); err != nil {
			return fail("write", err)
		}
		if err := f.Sync(); err != nil {
			return fail("sync", err)
		}
		lat = append(lat, ms(time.Since(t)))
	}
	elapsed := time.Since(start)
	if err := f.Close(); err != nil {
		return nil, 0, fmt.Errorf("close %s: %w", path, err)
	}
	return lat, elapsed, nil
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
