package clock

import (
	"testing"
	"time"
)

func TestFakeTimerFiresOnAdvance(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f := NewFake(start)
	tm := f.NewTimer(10 * time.Second)
	f.Advance(9 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("timer fired early")
	default:
	}
	f.Advance(time.Second)
	select {
	case got := <-tm.C():
		if !got.Equal(start.Add(10 * time.Second)) {
			t.Fatalf("fired at %v", got)
		}
	default:
		t.Fatal("timer did not fire")
	}
	if f.Timers() != 0 {
		t.Fatalf("Timers() = %d after firing", f.Timers())
	}
}

func TestFakeTimerStopAndReset(t *testing.T) {
	t.Parallel()
	f := NewFake(time.Unix(0, 0))
	tm := f.NewTimer(time.Minute)
	if !tm.Stop() {
		t.Fatal("Stop on an active timer reported false")
	}
	f.Advance(2 * time.Minute)
	select {
	case <-tm.C():
		t.Fatal("stopped timer fired")
	default:
	}
	if tm.Reset(time.Second) {
		t.Fatal("Reset on a stopped timer reported true")
	}
	f.Set(f.Now().Add(time.Second))
	select {
	case <-tm.C():
	default:
		t.Fatal("reset timer did not fire")
	}
}

func TestOrReal(t *testing.T) {
	t.Parallel()
	if _, ok := OrReal(nil).(Real); !ok {
		t.Fatalf("OrReal(nil) = %T, want Real", OrReal(nil))
	}
	f := NewFake(time.Unix(0, 0))
	if OrReal(f) != Clock(f) {
		t.Fatal("OrReal(fake) is not the fake")
	}
}

func TestBlockUntilWaitsForATimer(t *testing.T) {
	t.Parallel()
	f := NewFake(time.Unix(0, 0))
	f.BlockUntil(0) // nothing to wait for
	armed := make(chan Timer)
	go func() { armed <- f.NewTimer(time.Second) }()
	f.BlockUntil(1)
	tm := <-armed
	tm.Stop()
	go func() { tm.Reset(time.Second) }()
	f.BlockUntil(1) // a Reset arms it again
	if n := f.Timers(); n != 1 {
		t.Fatalf("Timers() = %d after BlockUntil(1)", n)
	}
}
