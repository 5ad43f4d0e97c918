package automations

import (
	"context"
	"sync"

	"github.com/cairnhq/cairn/store"
)

// Prepared fires are committed in slices, not in one store operation: a
// fire's lag is the time until its own run is durable, and in one
// transaction of a thousand fires the first waits for the last. The first
// slice holds Config.FireSlice fires and each next one twice as many as
// the one before, up to maxFireSlice: small slices make the first fires
// durable soon, while growing ones keep the commits few (each slice costs
// a commit and its fixed reads, and the runs fired first start executing
// and compete for the store's writer with the slices after them). Two
// slices are in flight at a time, so that the writer has the next one
// queued while it commits the current one.
const (
	fireSlicesInFlight = 2
	maxFireSlice       = 256
)

// fireSliced records ps with FireMany in growing slices, returning each fire's
// outcome in order. A slice that fails leaves its fires, and those of the
// slices not started yet, with that error: the pass that follows decides
// them afresh.
func (s *Scheduler) fireSliced(ctx context.Context, ps []store.FireParams) []store.FireOutcome {
	outs := make([]store.FireOutcome, len(ps))
	n := s.cfg.FireSlice
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed error
	)
	slots := make(chan struct{}, fireSlicesInFlight)
	for lo, hi := 0, 0; lo < len(ps); lo, n = hi, min(2*n, max(maxFireSlice, s.cfg.FireSlice)) {
		hi = min(lo+n, len(ps))
		slots <- struct{}{}
		mu.Lock()
		err := failed
		mu.Unlock()
		if err != nil {
			for i := lo; i < hi; i++ {
				outs[i].Err = err
			}
			<-slots
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			got, err := s.storeFireMany(ctx, ps[lo:hi])
			if err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
				for i := lo; i < hi; i++ {
					outs[i].Err = err
				}
				if ctx.Err() == nil {
					s.log.Warn("fire prepared slice", "fires", hi-lo, "err", err)
				}
				return
			}
			copy(outs[lo:hi], got)
		}()
	}
	wg.Wait()
	return outs
}
