package runs

import (
	"context"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// startExecution registers and starts an execution of run id, which the
// caller has locked; claimed, when set, is the run as Launch stored it,
// claimed already. It reports false when the engine is stopped.
func (e *Engine) startExecution(id string, lock unlocker, claimed *store.Run, launched *launchedRun) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return false
	}
	hard, cancelHard := context.WithCancelCause(e.base)
	ctx, cancelSoft := context.WithCancelCause(hard)
	cancel := routeCancel(cancelSoft, cancelHard)
	x := &execution{e: e, id: id, lock: lock, ctx: ctx, hard: hard, cancel: cancel, claimed: claimed, launched: launched}
	if claimed != nil {
		x.claim = claimed.Claim
	} else {
		x.claim = ids.New("claim")
	}
	e.active[id] = x
	e.wg.Add(1)
	if !e.watching {
		e.watching = true
		e.wg.Add(1)
		go e.watchOwned()
	}
	go func() {
		defer e.wg.Done()
		x.execute()
		e.mu.Lock()
		delete(e.active, id)
		none := len(e.active) == 0
		e.mu.Unlock()
		if none {
			select {
			case e.idle <- struct{}{}:
			default:
			}
		}
		cancel(nil)
		lock.Unlock()
		e.forgetLeases(id)
		e.changed(id)
		e.kickLoop()
	}()
	return true
}

// watchOwned polls the store every CancelPoll while this engine executes
// runs, with one query for all of them: a cancel requested by another
// process cancels the execution, and a run whose claim was replaced (taken
// over) stops it. It returns when no execution is left.
func (e *Engine) watchOwned() {
	defer e.wg.Done()
	t := e.clk.NewTimer(e.opts.CancelPoll)
	defer t.Stop()
	for {
		tick := false
		select {
		case <-t.C():
			t.Reset(e.opts.CancelPoll)
			tick = true
		case <-e.idle:
		}
		e.mu.Lock()
		if len(e.active) == 0 {
			e.watching = false
			e.mu.Unlock()
			return
		}
		var (
			ids   []string
			owned map[string]*execution
		)
		if tick {
			owned = make(map[string]*execution, len(e.active))
			for id, x := range e.active {
				if x.owned.Load() {
					ids = append(ids, id)
					owned[id] = x
				}
			}
		}
		e.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		claims, err := e.st.RunClaims(e.base, ids)
		if err != nil {
			continue
		}
		for _, c := range claims {
			x := owned[c.ID]
			switch {
			case c.Claim != x.claim && c.Status == store.RunRunning:
				x.cancel(errLost)
			case c.CancelRequested:
				x.cancel(errCancelRequested)
			}
		}
	}
}
