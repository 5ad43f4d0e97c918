package transport

import (
	"context"
	"errors"
	"sync"
	"time"
)

// errClientGone is the cancellation cause of waits (and, after
// shutdownGrace, of requests) still in flight when the client closed its
// end.
var errClientGone = errors.New("the client closed the connection")

type goneKey struct{}

// WaitContext derives a context for a long wait (a long poll, launch_run's
// wait) that also ends when the client closed its end of the connection:
// nobody is left to read the answer. Other work runs on to its end.
func WaitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	gone, ok := ctx.Value(goneKey{}).(context.Context)
	if !ok {
		return ctx, func() { cancel(nil) }
	}
	stop := context.AfterFunc(gone, func() { cancel(context.Cause(gone)) })
	return ctx, func() { stop(); cancel(nil) }
}

// waitTimeout waits for wg for at most d and reports whether it finished.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
