package main

import (
	"math"
	"testing"
	"time"
)

func TestSteadyRate(t *testing.T) {
	// 100 completions, one every 10 ms between a burst at the start and
	// stragglers at the end: the rate is that of the middle.
	var at []time.Duration
	for i := range 100 {
		switch {
		case i < 5:
			at = append(at, 0)
		case i < 95:
			at = append(at, time.Second+time.Duration(i-5)*10*time.Millisecond)
		default:
			at = append(at, 20*time.Second)
		}
	}
	got, err := steadyRate(at)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got-100) > 1e-9 {
		t.Fatalf("steady rate %v, want 100/s", got)
	}
	if _, err := steadyRate(at[:9]); err == nil {
		t.Fatal("steady rate of 9 completions: no error")
	}
}

func TestDSNPath(t *testing.T) {
	if got := dsnPath(sqliteDSN("/tmp/x/river.sqlite3", "FULL")); got != "/tmp/x/river.sqlite3" {
		t.Fatalf("dsnPath = %q", got)
	}
}
