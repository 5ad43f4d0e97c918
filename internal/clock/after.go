package clock

import (
	"sync"
	"time"
)

// AfterFunc calls f in its own goroutine once d has passed on c, as
// time.AfterFunc does on the wall clock; on a Fake, when Advance or Set
// reaches it. stop cancels the call unless it has started, and reports
// whether it cancelled it.
func AfterFunc(c Clock, d time.Duration, f func()) (stop func() bool) {
	if _, ok := OrReal(c).(Real); ok {
		return time.AfterFunc(d, f).Stop
	}
	t := c.NewTimer(d)
	var (
		mu    sync.Mutex
		ended bool // fired or stopped
		done  = make(chan struct{})
	)
	go func() {
		select {
		case <-t.C():
			mu.Lock()
			run := !ended
			ended = true
			mu.Unlock()
			if run {
				f()
			}
		case <-done:
		}
	}()
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		if ended {
			return false
		}
		ended = true
		t.Stop()
		close(done)
		return true
	}
}

// Ticker sends the time on C every period, dropping ticks a slow reader
// misses, as time.Ticker does.
type Ticker struct {
	C    <-chan time.Time
	stop func()
}

// Stop ends the ticker; no tick is sent after it returns. It is
// idempotent.
func (t *Ticker) Stop() { t.stop() }

// NewTicker returns a ticker on c. On a Fake, each Advance or Set that
// reaches the next tick sends one (a jump over several periods sends one,
// and the next tick is a period after the jump).
func NewTicker(c Clock, period time.Duration) *Ticker {
	if _, ok := OrReal(c).(Real); ok {
		t := time.NewTicker(period)
		return &Ticker{C: t.C, stop: t.Stop}
	}
	ch := make(chan time.Time, 1)
	t := c.NewTimer(period)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case now := <-t.C():
				select {
				case ch <- now:
				default:
				}
				t.Reset(period)
			case <-done:
				t.Stop()
				return
			}
		}
	}()
	var once sync.Once
	return &Ticker{C: ch, stop: func() {
		once.Do(func() { close(done) })
		<-exited
	}}
}
