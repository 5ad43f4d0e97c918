package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// nextWaker is the optional store method peers wait with instead of
// polling for durable sleeps (runs reads it by type assertion).
type nextWaker interface {
	NextWake(ctx context.Context) (time.Time, error)
}

func testNextWake(t *testing.T, s store.Store) {
	w, ok := s.(nextWaker)
	if !ok {
		t.Skip("this store has no NextWake: peers poll for durable sleeps")
	}
	ctx := context.Background()
	next := func() time.Time {
		t.Helper()
		at, err := w.NextWake(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	if at := next(); !at.IsZero() {
		t.Fatalf("NextWake of an empty store = %v, want none", at)
	}
	for i, id := range []string{"run_later", "run_sooner", "run_ask"} {
		mustCreate(t, s, &store.Run{ID: id, CreatedAt: t0.Add(time.Duration(i) * time.Millisecond)})
		mustClaim(t, s, id, "c"+id)
	}
	startAsk(t, s, "run_ask", "crun_ask", "q1") // waits for an answer only
	if at := next(); !at.IsZero() {
		t.Fatalf("NextWake with a question and no sleeper = %v, want none", at)
	}
	later, sooner := tNow.Add(time.Hour), tNow.Add(time.Minute)
	for id, at := range map[string]time.Time{"run_later": later, "run_sooner": sooner} {
		if _, err := s.ParkRun(ctx, store.ParkParams{Now: tNow, ID: id, Claim: "c" + id, WakeAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	if at := next(); !at.Equal(sooner) {
		t.Fatalf("NextWake = %v, want the sooner sleeper's %v", at, sooner)
	}
	// Claimed again (it woke): the later one is next.
	if _, err := s.ClaimRun(ctx, store.ClaimParams{ID: "run_sooner", Claim: "again", PID: 1, Now: sooner}); err != nil {
		t.Fatal(err)
	}
	if at := next(); !at.Equal(later) {
		t.Fatalf("NextWake after the sooner sleeper woke = %v, want %v", at, later)
	}
}
