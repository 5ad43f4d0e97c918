package locks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
)

// Lease-only duties stand for peers on two machines: each has its own
// lock folder (lock files do not reach the other), one store between
// them. The lease alone decides: taken once, moved when its holder stops
// renewing, refused to the old holder after.
func TestLeaseOnlyDutyMovesWithTheLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memory.New()
	newPeer := func() (*dutyPeer, string) {
		dir := t.TempDir()
		clk := clock.NewFake(dutyT0)
		return &dutyPeer{clk: clk, duty: NewDuty(DutyConfig{Dir: dir, Name: "scheduler", Leases: st, Clock: clk, LeaseOnly: true})}, dir
	}
	a, dirA := newPeer()
	b, dirB := newPeer()
	ha := mustTake(t, a)
	if l := ha.Lease(); l.Flocked || l.Epoch != 1 {
		t.Fatalf("lease-only take: %+v, want epoch 1 without the lock file", l)
	}
	var held *DutyHeldError
	if _, err := b.duty.TryTake(ctx); !errors.As(err, &held) || held.Lease == nil || held.Lease.Holder != ha.Lease().Holder {
		t.Fatalf("take on the other machine while the lease is current: %v", err)
	}
	b.clk.Advance(DefaultLease)
	hb := mustTake(t, b)
	if l := hb.Lease(); l.Epoch != 2 || l.Flocked {
		t.Fatalf("lease taken over: %+v", l)
	}
	if err := ha.Renew(ctx); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("the old holder's renewal: %v, want lost", err)
	}
	select {
	case <-ha.Lost():
	default:
		t.Fatal("Lost is not closed after the lost renewal")
	}
	b.clk.Advance(time.Second)
	if err := hb.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{dirA, dirB} {
		if _, err := os.Stat(filepath.Join(dir, "scheduler")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a lease-only duty made its lock file in %s: %v", dir, err)
		}
	}
	// Released, the next take needs no wait.
	if err := hb.Release(); err != nil {
		t.Fatal(err)
	}
	hb2 := mustTake(t, b)
	if hb2.Lease().Epoch != 3 {
		t.Fatalf("take after release: %+v", hb2.Lease())
	}
}

// refusingReleases is a lease store whose releases fail while refuse is
// set, as a store does while its disk is full.
type refusingReleases struct {
	store.LeaseStore
	refuse bool
}

func (r *refusingReleases) ReleaseLease(ctx context.Context, f store.LeaseFence) error {
	if r.refuse {
		return errors.New("state disk full")
	}
	return r.LeaseStore.ReleaseLease(ctx, f)
}

// A holding released while the store could not write leaves its lease
// current; the process's next take releases it first instead of waiting
// for it to expire, while another process still waits.
func TestUnreleasedLeaseIsReleasedByTheNextTake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &refusingReleases{LeaseStore: memory.New()}
	clk := clock.NewFake(dutyT0)
	a := &dutyPeer{clk: clk, duty: NewDuty(DutyConfig{Dir: t.TempDir(), Name: "scheduler", Leases: st, Clock: clk, LeaseOnly: true})}
	other := NewDuty(DutyConfig{Dir: t.TempDir(), Name: "scheduler", Leases: st, Clock: clk, LeaseOnly: true})
	h := mustTake(t, a)
	st.refuse = true
	if err := h.Release(); err == nil {
		t.Fatal("release with the store refusing writes: nil error")
	}
	var held *DutyHeldError
	if _, err := other.TryTake(ctx); !errors.As(err, &held) {
		t.Fatalf("another process's take of the unreleased lease: %v", err)
	}
	if _, err := a.duty.TryTake(ctx); !errors.As(err, &held) {
		t.Fatalf("take while the store still refuses: %v", err)
	}
	st.refuse = false
	h2, err := a.duty.TryTake(ctx)
	if err != nil {
		t.Fatalf("take once the store writes again: %v", err)
	}
	if l := h2.Lease(); l.Epoch != 2 || l.Holder == h.Lease().Holder {
		t.Fatalf("lease after the take: %+v", l)
	}
	h2.Release()
}
