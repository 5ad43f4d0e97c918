package runs

import (
	"context"
	"errors"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

// Resume executes run id in this process if it is runnable, not executing
// here already, and its lock is free. It reports whether it started.
func (e *Engine) Resume(ctx context.Context, id string) (bool, error) {
	if err := ids.Validate("run id", id); err != nil {
		return false, err
	}
	return e.resume(ctx, id)
}

// resume is Resume for an id known to be valid.
func (e *Engine) resume(ctx context.Context, id string) (bool, error) {
	if e.isStopped() {
		return false, ErrStopped
	}
	e.mu.Lock()
	_, busy := e.active[id]
	e.mu.Unlock()
	if busy {
		return false, nil
	}
	lock, err := e.locker.tryLock(id)
	if errors.Is(err, locks.ErrHeld) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// Read after locking: the previous owner may have settled it since.
	r, err := e.st.GetRun(ctx, id)
	if err != nil || !r.Runnable(e.now()) {
		lock.Unlock()
		return false, err
	}
	if !e.startExecution(id, lock, nil, nil) {
		lock.Unlock()
		return false, ErrStopped
	}
	return true, nil
}

// Start runs the peer loop until Stop: at once and then whenever a run
// may have become adoptable (see peer_wait.go; every AdoptEvery where
// the store or locker cannot tell) it adopts runnable runs whose lock is
// free (up to MaxConcurrent executing). It returns at once.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return ErrStopped
	}
	if e.loopDone != nil {
		return errors.New("start run engine: already started")
	}
	lctx, stop := context.WithCancel(ctx)
	e.loopStop = stop
	e.loopDone = make(chan struct{})
	go e.loop(lctx, e.loopDone)
	return nil
}

func (e *Engine) kickLoop() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

func (e *Engine) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	seen := &changeTracker{}
	w := e.newPeerWaits() // nil: poll every AdoptEvery
	if w != nil {
		defer w.close()
		e.noticeChanges(ctx, seen) // where to look from, before the first pass
	}
	for {
		owners := e.adopt(ctx)
		if w != nil {
			if !w.wait(ctx, seen, w.track(owners)) {
				return
			}
			continue
		}
		if e.opts.OnChange != nil {
			e.noticeChanges(ctx, seen)
		}
		t := e.clk.NewTimer(e.opts.AdoptEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-e.kick:
			t.Stop()
		case <-t.C():
		}
	}
}

// adopt starts runnable runs whose owner is gone (or that nobody claimed).
// It returns the live owners of the runs it found held by another process
// (pid -> one of their runs), or nil when it listed no run.
func (e *Engine) adopt(ctx context.Context) map[int]string {
	room := e.opts.MaxConcurrent - e.Executing()
	if room <= 0 {
		return nil
	}
	// Running runs whose owners live are listed too (only their lock
	// tells): look far enough past them.
	rs, err := e.st.RunnableRuns(ctx, e.now(), 256)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("list runnable runs", "err", err)
		}
		return nil
	}
	owners := map[int]string{}
	for _, r := range rs {
		if e.Executing() >= e.opts.MaxConcurrent || ctx.Err() != nil {
			return nil
		}
		started, err := e.resume(ctx, r.ID)
		if err != nil && !errors.Is(err, ErrStopped) && ctx.Err() == nil {
			e.log.Warn("adopt run", "run", r.ID, "err", err)
		}
		if !started && err == nil && r.Status == store.RunRunning && r.OwnerPID != 0 && r.OwnerPID != e.pid {
			owners[r.OwnerPID] = r.ID
		}
	}
	return owners
}

// changeTracker is where the peer loop is in the store's sequence of run
// changes.
type changeTracker struct {
	last  int64
	ready bool // last is set
}

// noticeChanges calls OnChange (when set) for each run changed since the
// last call (changes of this engine included: a waiter ignores what it
// knew): one indexed query that returns each change once. It returns how
// many changes it saw; a failed read counts as one, so that a waiting
// peer looks at the runs rather than miss a change.
func (e *Engine) noticeChanges(ctx context.Context, t *changeTracker) int {
	if !t.ready {
		last, err := e.st.LastRunChange(ctx)
		if err != nil {
			return 1
		}
		t.last, t.ready = last, true
		return 0
	}
	n := 0
	for {
		cs, err := e.st.ChangedRuns(ctx, t.last, store.MaxListLimit)
		if err != nil {
			return n + 1
		}
		for _, c := range cs {
			if e.opts.OnChange != nil {
				e.opts.OnChange(c.ID)
			}
			t.last = c.Seq
		}
		n += len(cs)
		if len(cs) < store.MaxListLimit || ctx.Err() != nil {
			return n
		}
	}
}
