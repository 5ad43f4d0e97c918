package locks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cairnhq/cairn/internal/wake"
)

// WaitFree blocks, after TryTake found the duty held (held), until taking
// it may succeed: the holder exited (the kernel freed its lock file), the
// lock file changed (released: the record is cleared; or taken by
// another), or the holder's lease comes to expire without a renewal seen.
// So a follower makes no wake-up while the holder makes progress, but
// one every lease length to look at the lease. When the holder or its
// lock file cannot be watched (no holder record or lease yet, or the OS
// cannot), it waits retry, as a poll. It returns nil when it is time to
// try again, or an error when ctx ended.
func (d *Duty) WaitFree(ctx context.Context, held *DutyHeldError, retry time.Duration) error {
	wait := retry
	var exited, moved <-chan struct{}
	if w, x, ok := d.watchHolder(held); ok {
		if w == nil {
			return nil // gone already, or released meanwhile
		}
		defer w.Close()
		defer x.Stop()
		exited, moved = x.Done(), w.Subscribe(d.cfg.Name).C()
		if held.Lease != nil && held.Lease.Holder != "" {
			wait = max(held.Lease.Expires.Sub(d.cfg.Clock.Now()), time.Millisecond)
		}
	}
	t := d.cfg.Clock.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("wait for duty %s: %w", d.cfg.Name, context.Cause(ctx))
	case <-exited:
	case <-moved:
	case <-t.C():
	}
	return nil
}

// watchHolder watches the lock file's folder and the holder's exit. ok
// false: it cannot (poll instead); w nil with ok: try again now.
func (d *Duty) watchHolder(held *DutyHeldError) (w *wake.Dir, x *wake.Exit, ok bool) {
	pid := held.Lock.PID
	if pid == 0 {
		return nil, nil, false
	}
	w, err := wake.WatchDir(d.cfg.Dir)
	if err != nil {
		return nil, nil, false
	}
	x, err = wake.WatchExit(pid)
	if err != nil {
		w.Close()
		return nil, nil, errors.Is(err, os.ErrProcessDone)
	}
	// Released (or taken by another) between the try and the watch: the
	// record tells.
	path, err := lockPath(d.cfg.Dir, d.cfg.Name)
	if err != nil {
		x.Stop()
		w.Close()
		return nil, nil, false
	}
	if r, ok := readRecord(path); !ok || r.gone() || r.PID != pid {
		x.Stop()
		w.Close()
		return nil, nil, true
	}
	return w, x, true
}
