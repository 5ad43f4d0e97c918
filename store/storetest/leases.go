package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

func testLeases(t *testing.T, newStore NewFunc) {
	runCases(t, newStore, []storeCase{
		{"take, renew, expire, release", testLeaseLifecycle},
		{"a lock file holder takes over a flocked lease", testLeaseFlockedTakeover},
		{"racing takes give one holder", testLeaseRace},
		{"fires and records are fenced by the lease", testLeaseFence},
	})
}

const leaseTTL = 5 * time.Second

func take(s store.Store, holder string, flocked bool, now time.Time) (store.Lease, error) {
	return s.TakeLease(context.Background(), store.LeaseParams{Name: "scheduler", Holder: holder, PID: len(holder), Flocked: flocked, Now: now, TTL: leaseTTL})
}

func testLeaseLifecycle(t *testing.T, s store.Store) {
	ctx := context.Background()
	if _, err := s.GetLease(ctx, "scheduler"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetLease before any take: %v, want not found", err)
	}
	if _, err := s.TakeLease(ctx, store.LeaseParams{Name: "scheduler", Holder: "a", Now: autT0}); err == nil {
		t.Fatal("a take without a lease length was accepted")
	}
	a, err := take(s, "a", false, autT0)
	if err != nil || a.Epoch != 1 || a.Holder != "a" || !a.Since.Equal(autT0) || !a.Expires.Equal(autT0.Add(leaseTTL)) {
		t.Fatalf("first take: %+v, %v", a, err)
	}
	var held *store.LeaseHeldError
	if _, err := take(s, "b", false, autT0.Add(time.Second)); !errors.As(err, &held) || held.Lease.Holder != "a" {
		t.Fatalf("take of a held lease: %v, want a LeaseHeldError naming a", err)
	}
	// Renewal keeps the epoch and moves the expiry.
	at := autT0.Add(4 * time.Second)
	r, err := s.TakeLease(ctx, store.LeaseParams{Name: "scheduler", Holder: "a", PID: 1, Epoch: a.Epoch, Now: at, TTL: leaseTTL})
	if err != nil || r.Epoch != 1 || !r.Since.Equal(autT0) || !r.Renewed.Equal(at) || !r.Expires.Equal(at.Add(leaseTTL)) {
		t.Fatalf("renewal: %+v, %v", r, err)
	}
	if _, err := take(s, "b", false, at.Add(leaseTTL-time.Millisecond)); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("take before the renewed expiry: %v", err)
	}
	// Unrenewed past its expiry, the lease goes to the next taker.
	late := at.Add(leaseTTL)
	b, err := take(s, "b", false, late)
	if err != nil || b.Epoch != 2 || b.Holder != "b" || !b.Since.Equal(late) {
		t.Fatalf("take of an expired lease: %+v, %v", b, err)
	}
	var lost *store.LeaseLostError
	if _, err := s.TakeLease(ctx, store.LeaseParams{Name: "scheduler", Holder: "a", Epoch: 1, Now: late, TTL: leaseTTL}); !errors.As(err, &lost) || lost.Current.Holder != "b" {
		t.Fatalf("renewal of a lease taken over: %v, want a LeaseLostError naming b", err)
	}
	// Releasing someone else's holding does nothing; releasing one's own
	// frees the lease and keeps the epoch.
	if err := s.ReleaseLease(ctx, a.Fence()); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetLease(ctx, "scheduler"); err != nil || got != b {
		t.Fatalf("after a stale release: %+v, %v; want %+v", got, err, b)
	}
	if err := s.ReleaseLease(ctx, b.Fence()); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetLease(ctx, "scheduler")
	if err != nil || got.Holder != "" || got.Epoch != 2 || got.Held(late) {
		t.Fatalf("released lease: %+v, %v", got, err)
	}
	if _, err := s.TakeLease(ctx, store.LeaseParams{Name: "scheduler", Holder: "b", Epoch: 2, Now: late, TTL: leaseTTL}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("renewal after release: %v", err)
	}
	c, err := take(s, "c", false, late)
	if err != nil || c.Epoch != 3 {
		t.Fatalf("take after release: %+v, %v", c, err)
	}
}

func testLeaseFlockedTakeover(t *testing.T, s store.Store) {
	if _, err := take(s, "a", true, autT0); err != nil {
		t.Fatal(err)
	}
	// b does not hold the lock file: a's fresh lease stands.
	if _, err := take(s, "b", false, autT0.Add(time.Second)); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("take without the lock file: %v", err)
	}
	// b holds the lock file now, which a held: a let it go.
	b, err := take(s, "b", true, autT0.Add(time.Second))
	if err != nil || b.Holder != "b" || b.Epoch != 2 || !b.Flocked {
		t.Fatalf("take with the lock file a held: %+v, %v", b, err)
	}
	// c took over without the lock file (b froze): holding the lock file
	// later does not let d take c's fresh lease.
	late := autT0.Add(time.Second + leaseTTL)
	if _, err := take(s, "c", false, late); err != nil {
		t.Fatal(err)
	}
	if _, err := take(s, "d", true, late.Add(time.Second)); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("lock file holder against a lease taken without it: %v", err)
	}
}

func testLeaseRace(t *testing.T, s store.Store) {
	const n = 8
	won := make([]bool, n)
	concurrently(t, n, func(i int) error {
		_, err := take(s, string(rune('a'+i)), false, autT0)
		won[i] = err == nil
		if err != nil && !errors.Is(err, store.ErrLeaseHeld) {
			return err
		}
		return nil
	})
	winners := 0
	for _, w := range won {
		if w {
			winners++
		}
	}
	if winners != 1 {
		t.Fatalf("%d of %d racing takes won the lease", winners, n)
	}
}

func testLeaseFence(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreateAutomation(t, s, newTestAutomation("aut_a", "nightly"))
	a, err := take(s, "a", false, autT0)
	if err != nil {
		t.Fatal(err)
	}
	fa := a.Fence()
	n1 := autT0.Add(time.Minute)
	if _, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: n1, Actual: n1, Run: newFireRun("run_1", "aut_a", n1), Lease: &fa}); err != nil {
		t.Fatalf("fire under the current lease: %v", err)
	}
	// b takes the expired lease: a's fences are refused, nothing written.
	if _, err := take(s, "b", false, autT0.Add(leaseTTL)); err != nil {
		t.Fatal(err)
	}
	n2 := n1.Add(time.Minute)
	before := mustGetAutomation(t, s, "aut_a")
	if _, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: n2, Actual: n2, Run: newFireRun("run_2", "aut_a", n2), Lease: &fa}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("fire under a lost lease: %v, want ErrLeaseLost", err)
	}
	if _, err := s.FireMany(ctx, []store.FireParams{{AutomationID: "aut_a", Nominal: n2, Actual: n2, Run: newFireRun("run_3", "aut_a", n2), Lease: &fa}}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("FireMany under a lost lease: %v, want ErrLeaseLost", err)
	}
	if _, err := s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_a", Cursor: n2, Missed: 1, Lease: &fa}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("record under a lost lease: %v, want ErrLeaseLost", err)
	}
	for _, id := range []string{"run_2", "run_3"} {
		if _, err := s.GetRun(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a fenced-off fire queued %s: %v", id, err)
		}
	}
	if after := mustGetAutomation(t, s, "aut_a"); after.State != before.State {
		t.Fatalf("fenced-off writes changed the state:\n%+v\n%+v", before.State, after.State)
	}
	fires, err := s.ListFires(ctx, "aut_a", 0)
	if err != nil || len(fires) != 1 {
		t.Fatalf("fires after fenced-off writes: %d, %v", len(fires), err)
	}
}
