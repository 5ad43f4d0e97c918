// Package clock makes time a dependency: production code asks a Clock for
// the time and for timers, and tests pass a Fake they can Advance.
package clock

import (
	"slices"
	"sort"
	"sync"
	"time"
)

// Clock tells the time and makes timers. Implementations are safe for
// concurrent use.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that sends the time on C once d has passed.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer that schedulers use.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was active.
	Stop() bool
	// Reset changes the timer to fire after d; it reports whether it was active.
	Reset(d time.Duration) bool
}

// Real is the wall clock.
type Real struct{}

// OrReal returns c, or the wall clock when c is nil, so that a config's
// nil Clock means "real".
func OrReal(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}

func (Real) Now() time.Time { return time.Now() }

func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Fake is a Clock that only moves when Advance or Set is called.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	armed  chan struct{} // closed when a timer is armed; see BlockUntil
}

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, c: make(chan time.Time, 1), when: f.now.Add(d), active: true}
	f.timers = append(f.timers, t)
	f.fireLocked()
	f.armedLocked()
	return t
}

// Advance moves the clock forward by d, firing every timer that falls due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	f.fireLocked()
}

// Set moves the clock to t (which may be in the past, as a clock jump is).
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t
	f.fireLocked()
}

// Timers reports how many timers are waiting.
func (f *Fake) Timers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.activeLocked()
}

// BlockUntil waits until at least n timers are waiting, so that a test
// advances the clock only once the code under test has armed its timer.
func (f *Fake) BlockUntil(n int) {
	for {
		f.mu.Lock()
		if f.activeLocked() >= n {
			f.mu.Unlock()
			return
		}
		if f.armed == nil {
			f.armed = make(chan struct{})
		}
		armed := f.armed
		f.mu.Unlock()
		<-armed
	}
}

func (f *Fake) activeLocked() int {
	n := 0
	for _, t := range f.timers {
		if t.active {
			n++
		}
	}
	return n
}

// armedLocked wakes the BlockUntil callers after a timer was armed.
func (f *Fake) armedLocked() {
	if f.armed != nil {
		close(f.armed)
		f.armed = nil
	}
}

func (f *Fake) fireLocked() {
	sort.Slice(f.timers, func(i, j int) bool { return f.timers[i].when.Before(f.timers[j].when) })
	kept := f.timers[:0]
	for _, t := range f.timers {
		if t.active && !t.when.After(f.now) {
			t.active = false
			select {
			case t.c <- f.now:
			default:
			}
		}
		if t.active {
			kept = append(kept, t)
		}
	}
	f.timers = kept
}

type fakeTimer struct {
	f      *Fake
	c      chan time.Time
	when   time.Time
	active bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.active
	t.active = false
	// Drop it from the waiting timers, so that a Reset adds it once.
	t.f.timers = slices.DeleteFunc(t.f.timers, func(o *fakeTimer) bool { return o == t })
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.active
	t.when = t.f.now.Add(d)
	if !t.active {
		t.active = true
		t.f.timers = append(t.f.timers, t)
	}
	t.f.fireLocked()
	t.f.armedLocked()
	return was
}
