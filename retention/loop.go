package retention

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Loop timing defaults: soon after start, then hourly.
const (
	DefaultFirstDelay = time.Minute
	DefaultInterval   = time.Hour
)

// Loop runs a Collector periodically between Start and Stop, on the
// collector's clock.
type Loop struct {
	C *Collector
	// FirstDelay is the wait before the first pass (zero: DefaultFirstDelay),
	// Interval the wait after each pass (zero: DefaultInterval).
	FirstDelay, Interval time.Duration
	// OnCollect, when set, is called after each pass (tests wait on it).
	OnCollect func(Report, error)

	mu     sync.Mutex
	cancel context.CancelCauseFunc
	done   chan struct{}
}

var errStopped = errors.New("retention loop stopped")

// Start starts the loop and returns. A second Start does nothing.
func (l *Loop) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return nil
	}
	first, every := l.FirstDelay, l.Interval
	if first <= 0 {
		first = DefaultFirstDelay
	}
	if every <= 0 {
		every = DefaultInterval
	}
	ctx, l.cancel = context.WithCancelCause(ctx)
	l.done = make(chan struct{})
	timer := l.C.opts.Clock.NewTimer(first)
	go func() {
		defer close(l.done)
		defer timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-timer.C():
			}
			rep, err := l.C.Collect(ctx, false)
			if err != nil && ctx.Err() == nil {
				l.C.opts.Log.Warn("retention: collect runs", "err", err)
			}
			timer.Reset(every)
			if l.OnCollect != nil {
				l.OnCollect(rep, err)
			}
		}
	}()
	return nil
}

// Stop ends the loop and waits for a pass in progress. It is idempotent.
func (l *Loop) Stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel(errStopped)
	<-done
}
