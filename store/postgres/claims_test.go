package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/pgtest"
	"github.com/cairnhq/cairn/store"
)

// peers opens n stores of one workspace, each with its own pool: hosts
// on separate machines.
func peers(t *testing.T, n int) []*Store {
	t.Helper()
	url, id := pgtest.URL(t), pgtest.WorkspaceID()
	out := make([]*Store, n)
	for i := range out {
		s, err := Open(context.Background(), Config{URL: url, WorkspaceID: id, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out[i] = s
	}
	return out
}

// Racing claims of one queued run from several pools: exactly one takes
// it from the queue; every other claim either was refused (the row was
// locked by a claim in progress) or knowingly took it over from the
// claim before it, so no claim is lost and the revision counts them all.
func TestConcurrentClaimsTakeARunOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ps := peers(t, 3)
	const rounds, perPeer = 5, 4
	for round := range rounds {
		id := fmt.Sprintf("run_%d", round)
		if err := ps[0].CreateRun(ctx, &store.Run{ID: id, Target: "t"}); err != nil {
			t.Fatal(err)
		}
		var (
			mu      sync.Mutex
			won     []*store.Claimed
			refused int
			wg      sync.WaitGroup
		)
		for i := range len(ps) * perPeer {
			wg.Go(func() {
				c, err := ps[i%len(ps)].ClaimRun(ctx, store.ClaimParams{ID: id, Claim: fmt.Sprintf("c%d", i), PID: 100 + i, Now: time.Now()})
				mu.Lock()
				defer mu.Unlock()
				var se *store.RunStateError
				switch {
				case err == nil:
					won = append(won, c)
				case errors.As(err, &se):
					refused++
				default:
					t.Errorf("claim %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		fromQueue := 0
		pids := map[int]bool{0: true}
		for _, c := range won {
			if c.PrevStatus == store.RunQueued {
				fromQueue++
			}
			pids[c.Run.OwnerPID] = true
		}
		for _, c := range won {
			if !pids[c.PrevOwnerPID] {
				t.Fatalf("round %d: a claim took the run over from pid %d, which never held it", round, c.PrevOwnerPID)
			}
		}
		r, err := ps[1].GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if fromQueue != 1 || r.Revision != int64(1+len(won)) || len(won)+refused != len(ps)*perPeer {
			t.Fatalf("round %d: %d claims took it from the queue (want 1), %d won, %d refused, revision %d", round, fromQueue, len(won), refused, r.Revision)
		}
	}
}

// A claim does not wait for a run another transaction is writing: it is
// refused at once (FOR UPDATE SKIP LOCKED), and succeeds once that ends.
func TestClaimSkipsALockedRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ps := peers(t, 2)
	if err := ps[0].CreateRun(ctx, &store.Run{ID: "run_x", Target: "t"}); err != nil {
		t.Fatal(err)
	}
	tx, err := ps[0].pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM runs WHERE id = 'run_x' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	var se *store.RunStateError
	if _, err := ps[1].ClaimRun(ctx, store.ClaimParams{ID: "run_x", Claim: "b", PID: 2, Now: time.Now()}); !errors.As(err, &se) || se.Status != store.RunQueued {
		t.Fatalf("claim of a locked run: %v, want a *RunStateError at once", err)
	}
	if _, err := ps[1].ClaimRun(ctx, store.ClaimParams{ID: "run_missing", Claim: "b", Now: time.Now()}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claim of a missing run: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := ps[1].ClaimRun(ctx, store.ClaimParams{ID: "run_x", Claim: "b", PID: 2, Now: time.Now()}); err != nil || c.PrevStatus != store.RunQueued {
		t.Fatalf("claim once unlocked: %+v, %v", c, err)
	}
}

// Writers on several pools and a poller of ChangedRuns at once: change
// numbers are given in commit order, so the poller, passing the last
// number it saw, misses no run's latest change.
func TestChangedRunsInCommitOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ps := peers(t, 3)
	const perPeer = 25
	done := make(chan struct{})
	var wg sync.WaitGroup
	for p, s := range ps {
		wg.Go(func() {
			for i := range perPeer {
				id := fmt.Sprintf("run_%d_%d", p, i)
				if err := s.CreateRun(ctx, &store.Run{ID: id, Target: "t"}); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.CancelRun(ctx, id, "test"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	seen := map[string]int64{} // run id -> latest revision seen
	var after int64
	poll := func() {
		changes, err := ps[0].ChangedRuns(ctx, after, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range changes {
			if c.Seq <= after {
				t.Fatalf("change %d came after %d", c.Seq, after)
			}
			after = c.Seq
			seen[c.ID] = c.Revision
		}
	}
	for polling := true; polling; {
		select {
		case <-done:
			polling = false
		default:
		}
		poll()
	}
	poll()
	if len(seen) != len(ps)*perPeer {
		t.Fatalf("the poller saw %d runs, want %d", len(seen), len(ps)*perPeer)
	}
	for id, rev := range seen {
		if rev != 2 {
			t.Fatalf("the poller's last change of %s has revision %d, want 2 (it missed the cancel)", id, rev)
		}
	}
	if last, err := ps[1].LastRunChange(ctx); err != nil || last != after {
		t.Fatalf("LastRunChange = %d, %v; the poller ended at %d", last, err, after)
	}
}
