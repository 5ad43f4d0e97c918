package runs

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
)

// Two lease lockers on one store stand for two machines, each with its own
// clock: a lock is held while its holder renews it, free for the other
// once unrenewed past its length, and never released for its successor by
// a holder that lost it.
func TestLeaseLockerHoldsRenewsAndLetsGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memory.New()
	t0 := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	times := LeaseTimes{Length: 10 * time.Second, Renew: 2 * time.Second}
	ca, cb := clock.NewFake(t0), clock.NewFake(t0)
	a, b := newLeaseLocker(st, ca, times), newLeaseLocker(st, cb, times)
	defer a.close()
	defer b.close()

	la, err := a.tryLock("run_1")
	if err != nil {
		t.Fatal(err)
	}
	var he *locks.HeldError
	if _, err := b.tryLock("run_1"); !errors.As(err, &he) || he.Holder.PID != os.Getpid() {
		t.Fatalf("second take: %v, want held by this process", err)
	}
	if held, err := b.isHeld("run_1"); err != nil || !held {
		t.Fatalf("isHeld on the other machine: %v %v", held, err)
	}
	lease := func() store.Lease {
		l, err := st.GetLease(ctx, "run:run_1")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// a renews at its Renew period: the lease reaches past its first expiry.
	ca.Advance(times.Renew)
	deadline := time.Now().Add(10 * time.Second)
	for !lease().Renewed.Equal(t0.Add(times.Renew)) {
		if time.Now().After(deadline) {
			t.Fatalf("no renewal: %+v", lease())
		}
		time.Sleep(time.Millisecond)
	}
	cb.Advance(times.Length)
	if _, err := b.tryLock("run_1"); !errors.Is(err, locks.ErrHeld) {
		t.Fatalf("take of a renewed lease past its first expiry: %v", err)
	}
	// a stops renewing (its clock stands still): b takes it at the expiry.
	cb.Advance(times.Renew)
	lb, err := b.tryLock("run_1")
	if err != nil {
		t.Fatalf("take of an expired lease: %v", err)
	}
	if l := lease(); l.Epoch != 2 {
		t.Fatalf("lease after the take-over: %+v", l)
	}
	// a's unlock must not free b's lease.
	if err := la.Unlock(); err != nil {
		t.Fatal(err)
	}
	if held, _ := a.isHeld("run_1"); !held {
		t.Fatal("the old holder's unlock released its successor's lease")
	}
	if err := lb.Unlock(); err != nil {
		t.Fatal(err)
	}
	if held, _ := a.isHeld("run_1"); held {
		t.Fatal("released lease still held")
	}
	if l, err := a.tryLock("run_1"); err != nil {
		t.Fatalf("take after release: %v", err)
	} else {
		l.Unlock()
	}
	if leaseName(stepKey("run_1")) != "step:run_1" || leaseName("run_1") != "run:run_1" {
		t.Fatal("lease names")
	}
}

func TestLeaseTimesCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lt LeaseTimes
		ok bool
	}{
		{LeaseTimes{}, true},
		{LeaseTimes{Length: time.Second}, true},
		{LeaseTimes{Length: 3 * time.Second, Renew: time.Second}, true},
		{LeaseTimes{Length: 2 * time.Second, Renew: time.Second}, false},
		{LeaseTimes{Renew: 5 * time.Second}, false},
	} {
		if err := tc.lt.Check(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v, want ok %v", tc.lt, err, tc.ok)
		}
	}
	if d := (LeaseTimes{}).withDefaults(); d.Length != DefaultRunLease || d.Renew != DefaultRenew {
		t.Errorf("defaults %+v", d)
	}
}
