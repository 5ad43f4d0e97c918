package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/cairnhq/cairn/store"
)

func testForgetLeases(t *testing.T, newStore NewFunc) {
	runCases(t, newStore, []storeCase{{"released leases are forgotten, held ones kept", testForgetLeasesCase}})
}

func testForgetLeasesCase(t *testing.T, s store.Store) {
	ctx := context.Background()
	lf, ok := s.(store.LeaseForgetter)
	if !ok {
		t.Skipf("%T forgets no leases (store.LeaseForgetter)", s)
	}
	takeAs := func(name, holder string) store.Lease {
		l, err := s.TakeLease(ctx, store.LeaseParams{Name: name, Holder: holder, PID: 1, Now: autT0, TTL: leaseTTL})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	released := takeAs("run:a", "h1")
	if err := s.ReleaseLease(ctx, released.Fence()); err != nil {
		t.Fatal(err)
	}
	takeAs("step:a", "h2") // held: kept
	if err := lf.ForgetLeases(ctx, []string{"run:a", "step:a", "run:never"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetLease(ctx, "run:a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("released lease after ForgetLeases: %v, want not found", err)
	}
	if l, err := s.GetLease(ctx, "step:a"); err != nil || l.Holder != "h2" {
		t.Fatalf("held lease after ForgetLeases: %+v, %v", l, err)
	}
	if err := lf.ForgetLeases(ctx, make([]string, store.MaxListLimit+1)); err == nil {
		t.Fatal("ForgetLeases of too many names was accepted")
	}
}
