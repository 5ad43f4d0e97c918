package runs

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// Cancel cancels a run. A queued or waiting run is cancelled at once
// (a waiting run with finally steps is resumed instead, to run them and
// settle cancelled); a running one's step in flight is told to stop at
// once (its supervisor, whichever process started it, sends its process
// group SIGTERM, then SIGKILL after KillGrace) and its owner settles it
// within about CancelPoll; a running run whose owner died is cancelled
// here. A settled run gives a *StateError.
func (e *Engine) Cancel(ctx context.Context, id string) (*Run, error) {
	if err := ids.Validate("run id", id); err != nil {
		return nil, err
	}
	reason := fmt.Sprintf("cancelled (requested by pid %d)", e.pid)
	cancel := e.st.CancelRun
	if cur, err := e.st.GetRun(ctx, id); err == nil && cur.Status == store.RunWaiting && hasFinally(cur, nil) {
		cancel = e.st.CancelToFinish // runnable now: its finally steps run, here or in a peer
	}
	r, err := cancel(ctx, id, reason)
	if err != nil {
		return nil, err
	}
	e.changed(id)
	if r.Status == store.RunWaiting {
		if _, err := e.resume(ctx, id); err != nil && !errors.Is(err, ErrStopped) {
			e.log.Warn("resume cancelled run", "run", id, "err", err)
		}
		return e.view(ctx, r, true)
	}
	if r.Status == store.RunCancelled {
		w := e.openJournal(id)
		if size, err := e.journals.size(id); err == nil && size == 0 {
			// Cancelled before any process claimed it: the journal still
			// starts with its start record.
			w.add(Record{Type: RecordStart, Run: id, Target: r.Target})
		}
		w.add(Record{Type: RecordEnd, Status: string(store.RunCancelled), Error: r.Error})
		w.close()
		return e.view(ctx, r, true)
	}
	// Running: stop its step, whoever owns the run (even a stuck owner),
	// tell our own execution at once, or take over an orphan.
	e.signalStepSupervisor(id)
	e.mu.Lock()
	x := e.active[id]
	e.mu.Unlock()
	if x != nil {
		x.cancel(errCancelRequested)
	} else if lock, err := e.locker.tryLock(id); err == nil {
		// An orphan with finally steps is adopted: they run, then it
		// settles cancelled.
		if cur, err := e.st.GetRun(ctx, id); err == nil && cur.Status == store.RunRunning && hasFinally(cur, nil) && e.startExecution(id, lock, nil, nil) {
			e.kickLoop()
		} else {
			e.settleOrphanCancel(ctx, id, lock)
		}
	}
	r, err = e.st.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	return e.view(ctx, r, true)
}

// settleOrphanCancel cancels a running run whose owner is gone: we hold
// its lock, so we claim it and settle it cancelled.
func (e *Engine) settleOrphanCancel(ctx context.Context, id string, lock unlocker) {
	defer lock.Unlock()
	claim := ids.New("claim")
	c, err := e.st.ClaimRun(ctx, store.ClaimParams{ID: id, Claim: claim, PID: e.pid, Now: e.now()})
	if err != nil {
		return
	}
	reason := fmt.Sprintf("cancelled (requested by pid %d; the previous owner pid %d was gone)", e.pid, c.PrevOwnerPID)
	if _, err := e.st.SettleRun(ctx, store.SettleParams{ID: id, Claim: claim, Status: store.RunCancelled, Error: reason, Now: e.now()}); err != nil {
		e.log.Warn("cancel run", "run", id, "err", err)
		return
	}
	w := e.openJournal(id)
	if size, err := e.journals.size(id); err == nil && size == 0 {
		// The owner died before its first records reached the journal.
		w.add(Record{Type: RecordStart, Run: id, Target: c.Run.Target})
	}
	w.add(Record{Type: RecordEnd, Status: string(store.RunCancelled), Error: reason})
	w.close()
	e.changed(id)
}
