package clock

import (
	"testing"
	"time"
)

func TestAfterFuncOnFake(t *testing.T) {
	t.Parallel()
	f := NewFake(time.Unix(0, 0))
	called := make(chan struct{})
	stop := AfterFunc(f, time.Minute, func() { close(called) })
	f.Advance(59 * time.Second)
	select {
	case <-called:
		t.Fatal("called early")
	default:
	}
	f.Advance(time.Second)
	<-called
	if stop() {
		t.Fatal("stop after the call reported that it cancelled it")
	}

	stop = AfterFunc(f, time.Minute, func() { t.Error("a stopped AfterFunc was called") })
	if !stop() {
		t.Fatal("stop before the call did not cancel it")
	}
	if stop() {
		t.Fatal("a second stop reported a cancel")
	}
	f.Advance(time.Hour)
	if n := f.Timers(); n != 0 {
		t.Fatalf("%d timers left", n)
	}
}

func TestAfterFuncOnRealClock(t *testing.T) {
	t.Parallel()
	called := make(chan struct{})
	AfterFunc(nil, time.Millisecond, func() { close(called) })
	<-called
	if stop := AfterFunc(Real{}, time.Hour, func() {}); !stop() {
		t.Fatal("stop did not cancel")
	}
}

func TestTickerOnFake(t *testing.T) {
	t.Parallel()
	start := time.Unix(0, 0)
	f := NewFake(start)
	tk := NewTicker(f, 10*time.Second)
	defer tk.Stop()
	for i := 1; i <= 3; i++ {
		f.BlockUntil(1) // re-armed after the previous tick
		f.Advance(10 * time.Second)
		if got := <-tk.C; !got.Equal(start.Add(time.Duration(i) * 10 * time.Second)) {
			t.Fatalf("tick %d at %v", i, got)
		}
	}
	// A jump over several periods sends one tick.
	f.BlockUntil(1)
	f.Advance(time.Minute)
	<-tk.C
	f.BlockUntil(1)
	select {
	case got := <-tk.C:
		t.Fatalf("a second tick for one jump, at %v", got)
	default:
	}
	tk.Stop()
	tk.Stop() // idempotent
	if n := f.Timers(); n != 0 {
		t.Fatalf("%d timers after Stop", n)
	}
}

func TestTickerOnRealClock(t *testing.T) {
	t.Parallel()
	tk := NewTicker(nil, time.Millisecond)
	<-tk.C
	<-tk.C
	tk.Stop()
}
