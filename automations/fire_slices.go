package automations

import (
	"context"
	"sync"

	"github.com/cairnhq/cairn/store"
)

// Prepared fires are committed in slices of Config.FireSlice, a store
// operation each, not in one: a fire's lag is the time until its own run
// is durable, and in one transaction of a thousand fires the first waits
// for the last. Two slices are in flight at a time, so that the store's
// writer has the next one queued while it commits the current one. Each
// slice costs a commit and the fixed reads of a FireMany, and the runs
// fired first start executing and compete with the later slices for the
// writer, so the last fire of a big slot lands later than in one
// transaction (bench figure 4 measures both).
const fireSlicesInFlight = 2

// fireSliced records ps with FireMany in slices, returning each fire's
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
	for lo := 0; lo < len(ps); lo += n {
		hi := min(lo+n, len(ps))
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
