package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// figFsync measures figure 2: the disk's ceiling for durable commits.
// A 1 MiB file is written round-robin, 4 KiB at a time, each write
// followed by fsync, the way a WAL is appended and reused: every commit
// of a SQLite database at synchronous=FULL costs at least one of these.
func figFsync(ctx context.Context, b *bench) error {
	const block = 4 << 10
	const slots = 256
	dur := time.Second
	if b.short {
		dur = 100 * time.Millisecond
	}
	b.rec.declare(9, "write+fsync 4 KiB", "ops/s", goal{})
	b.rec.note(9, "Each repetition writes 4 KiB at the next of 256 offsets of a preallocated 1 MiB file in %s and calls fsync, for %s.", b.disk.Dir, dur)
	for rep := range b.reps {
		if err := ctx.Err(); err != nil {
			return err
		}
		path := filepath.Join(b.disk.Dir, fmt.Sprintf("fsync-%d", rep))
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
		buf := make([]byte, block)
		for i := range buf {
			buf[i] = byte(i)
		}
		for i := range slots {
			if _, err := f.WriteAt(buf, int64(i*block)); err != nil {
				f.Close()
				return fmt.Errorf("preallocate %s: %w", path, err)
			}
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("sync %s: %w", path, err)
		}
		var lat []float64
		start := time.Now()
		for i := 0; time.Since(start) < dur; i++ {
			t := time.Now()
			buf[0] = byte(i)
			if _, err := f.WriteAt(buf, int64((i%slots)*block)); err != nil {
				f.Close()
				return fmt.Errorf("write %s: %w", path, err)
			}
			if err := f.Sync(); err != nil {
				f.Close()
				return fmt.Errorf("sync %s: %w", path, err)
			}
			lat = append(lat, ms(time.Since(t)))
		}
		elapsed := time.Since(start)
		if err := f.Close(); err != nil {
			return fmt.Errorf("close %s: %w", path, err)
		}
		os.Remove(path)
		b.rec.add(9, "write+fsync 4 KiB", "ops/s", goal{}, float64(len(lat))/elapsed.Seconds())
		b.rec.add(9, "latency p50", "ms", goal{}, percentile(lat, 50))
		b.rec.add(9, "latency p99", "ms", goal{}, percentile(lat, 99))
		b.logf("fig 9: rep %d: %d fsyncs in %s", rep+1, len(lat), elapsed.Round(time.Millisecond))
	}
	return nil
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
