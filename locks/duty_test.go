package locks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
)

var dutyT0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// dutyPeer is one peer's view of a duty: its own clock, so a test can
// leave one peer's time (a frozen process) behind another's.
type dutyPeer struct {
	clk  *clock.Fake
	duty *Duty
}

func newDutyPeer(dir string, st store.LeaseStore) *dutyPeer {
	clk := clock.NewFake(dutyT0)
	return &dutyPeer{clk: clk, duty: NewDuty(DutyConfig{Dir: dir, Name: "scheduler", Leases: st, Clock: clk})}
}

func mustTake(t *testing.T, p *dutyPeer) *Holding {
	t.Helper()
	h, err := p.duty.TryTake(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Release() })
	return h
}

func TestDutyIsTakenOnceAndReleased(t *testing.T) {
	t.Parallel()
	dir, st := t.TempDir(), memory.New()
	a, b := newDutyPeer(dir, st), newDutyPeer(dir, st)
	ha := mustTake(t, a)
	_, err := b.duty.TryTake(context.Background())
	var held *DutyHeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrHeld) || held.Lease == nil || held.Lease.Holder != ha.Lease().Holder {
		t.Fatalf("second take: %v, want a DutyHeldError with a's lease", err)
	}
	if err := ha.Release(); err != nil {
		t.Fatal(err)
	}
	hb := mustTake(t, b)
	if l := hb.Lease(); l.Epoch != 2 || !l.Flocked {
		t.Fatalf("lease after release and take: %+v", l)
	}
}

// A holder whose clock stands still (a stopped process) loses the duty
// once its lease expires on another peer's clock, although it keeps the
// lock file; when it runs again its renewal fails, it lets the lock file
// go, and the new holder takes the lock file at its next renewal.
func TestFrozenHolderLosesTheDuty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, st := t.TempDir(), memory.New()
	a, b := newDutyPeer(dir, st), newDutyPeer(dir, st)
	renewed := make(chan error, 1)
	b.duty.onRenew = func(err error) { renewed <- err }
	ha := mustTake(t, a)

	b.clk.Advance(DefaultLease - time.Millisecond)
	if _, err := b.duty.TryTake(ctx); !errors.Is(err, ErrHeld) {
		t.Fatalf("take before the lease expired: %v", err)
	}
	b.clk.Advance(time.Millisecond)
	hb := mustTake(t, b)
	if l := hb.Lease(); l.Epoch != 2 || l.Flocked {
		t.Fatalf("lease taken over: %+v, want epoch 2 without the lock file", l)
	}
	if !ha.Current() {
		t.Fatal("the frozen holder's own clock did not move, yet it thinks its lease is old")
	}

	// a runs again: its clock jumps, its renewal finds the lease lost.
	a.clk.Advance(DefaultLease + time.Second)
	if ha.Current() {
		t.Fatal("after the jump the frozen holder still thinks its lease is current")
	}
	select {
	case <-ha.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("the frozen holder never noticed it lost the lease")
	}
	if err := ha.Err(); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("lost holding's error: %v", err)
	}
	if err := store.CheckFence(leaseOf(t, st), ha.Fence()); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("the lost holding's fence still passes: %v", err)
	}

	// b's next renewal takes the lock file a let go.
	b.clk.Advance(time.Second)
	if err := <-renewed; err != nil {
		t.Fatal(err)
	}
	if l := hb.Lease(); !l.Flocked || l.Epoch != 2 {
		t.Fatalf("lease after the lock file was freed: %+v", l)
	}
	if _, held, _ := Describe(dir, "scheduler"); !held {
		t.Fatal("nobody holds the lock file")
	}
	// a competes again and finds b's lease current.
	if _, err := a.duty.TryTake(ctx); !errors.Is(err, ErrHeld) {
		t.Fatalf("the old holder took the duty back: %v", err)
	}
}

func leaseOf(t *testing.T, st store.LeaseStore) *store.Lease {
	t.Helper()
	l, err := st.GetLease(context.Background(), "scheduler")
	if err != nil {
		t.Fatal(err)
	}
	return &l
}

// TakeOrWatch gives up on a holder that renews, takes over from one that
// does not, and does not wait for a holder of the lock file alone.
func TestTakeOrWatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const lease = 300 * time.Millisecond
	newDuty := func(dir string, st store.LeaseStore, renew time.Duration) *Duty {
		return NewDuty(DutyConfig{Dir: dir, Name: "worker", Leases: st, Lease: lease, Renew: renew})
	}
	cases := map[string]struct {
		renew    time.Duration // the holder's; 0: it holds the lock file only
		takeOver bool
	}{
		"a renewing holder keeps the duty": {renew: lease / 10},
		"a stalled holder loses it":        {renew: time.Hour, takeOver: true},
		"a holder of the lock file only":   {},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir, st := t.TempDir(), memory.New()
			if c.renew > 0 {
				h, err := newDuty(dir, st, c.renew).TryTake(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer h.Release()
			} else {
				l, err := TryLock(dir, "worker")
				if err != nil {
					t.Fatal(err)
				}
				defer l.Unlock()
			}
			h, err := newDuty(dir, st, lease/10).TakeOrWatch(ctx)
			if c.takeOver {
				if err != nil {
					t.Fatalf("TakeOrWatch of a stalled holder's duty: %v", err)
				}
				h.Release()
				return
			}
			var held *DutyHeldError
			if !errors.As(err, &held) {
				t.Fatalf("TakeOrWatch: %v %v, want a DutyHeldError", h, err)
			}
			if (held.Lease != nil) != (c.renew > 0) {
				t.Fatalf("held error's lease: %+v", held.Lease)
			}
		})
	}
}

// hangingLeases is a lease store whose renewals hang until released (a
// store that cannot be reached): entered says a renewal is hanging.
type hangingLeases struct {
	store.LeaseStore
	takes   int
	entered chan struct{}
	release chan struct{}
}

func (s *hangingLeases) TakeLease(ctx context.Context, p store.LeaseParams) (store.Lease, error) {
	if s.takes++; s.takes > 1 {
		s.entered <- struct{}{}
		<-s.release
		return store.Lease{}, errors.New("the store cannot be reached")
	}
	return s.LeaseStore.TakeLease(ctx, p)
}

// TestLapsedWhileARenewalHangs: a holding whose renewal hangs (the store
// cannot be reached) says it lapsed once a lease's length passed since
// its latest renewal, without waiting for the renewal (Current waits).
func TestLapsedWhileARenewalHangs(t *testing.T) {
	t.Parallel()
	st := &hangingLeases{LeaseStore: memory.New(), entered: make(chan struct{}), release: make(chan struct{})}
	clk := clock.NewFake(dutyT0)
	h, err := NewDuty(DutyConfig{Name: "step:run_x", Leases: st, Clock: clk, LeaseOnly: true}).TryTake(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { close(st.release); h.Release() }()
	if h.Lapsed() {
		t.Fatal("lapsed right after the take")
	}
	clk.BlockUntil(1) // the renewal timer
	clk.Advance(DefaultLease / 5)
	<-st.entered // the renewal hangs, holding the holding's mutex
	clk.Advance(DefaultLease - DefaultLease/5 - time.Millisecond)
	lapsed := make(chan bool)
	go func() { lapsed <- h.Lapsed() }()
	select {
	case l := <-lapsed:
		if l {
			t.Fatal("lapsed before a lease's length passed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Lapsed waits for the hanging renewal")
	}
	clk.Advance(time.Millisecond)
	if !h.Lapsed() {
		t.Fatal("not lapsed a lease's length after the latest renewal")
	}
}
