package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/pgtest"
	"github.com/cairnhq/cairn/store"
	"github.com/jackc/pgx/v5"
)

// A backend killed just before COMMIT: the client cannot know what became
// of the write; the store looks its operation up and answers not
// committed, and nothing of it is there.
func TestKilledBeforeCommitIsNotCommitted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t, pgtest.URL(t))
	s.beforeCommit = func(tx pgx.Tx) {
		// With a timeout, pg_terminate_backend waits until the backend ended.
		pid := tx.Conn().PgConn().PID()
		var ended bool
		if err := s.pool.QueryRow(ctx, "SELECT pg_terminate_backend($1, 10000)", pid).Scan(&ended); err != nil || !ended {
			t.Errorf("terminate backend %d: %v, %v", pid, ended, err)
		}
	}
	err := s.CreateRun(store.WithOpID(ctx, "op_killed"), &store.Run{ID: "run_k", Target: "t"})
	var ce *store.CommitError
	if !errors.As(err, &ce) || ce.Outcome != store.NotCommitted || ce.OpID != "op_killed" {
		t.Fatalf("create with its backend killed: %v, want a CommitError not committed", err)
	}
	s.beforeCommit = nil
	if o, err := s.Outcome(ctx, "op_killed"); err != nil || o != store.NotCommitted {
		t.Fatalf("Outcome = %v, %v", o, err)
	}
	if _, err := s.GetRun(ctx, "run_k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the uncommitted run is there: %v", err)
	}
	if err := s.CreateRun(ctx, &store.Run{ID: "run_k", Target: "t"}); err != nil {
		t.Fatalf("the store does not write after a resolved outcome: %v", err)
	}
}

// The reply to COMMIT is lost after the server committed: the store looks
// the operation up and reports the write as done, without repeating it.
func TestLostCommitReplyIsResolvedCommitted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy, url := newCutProxy(t, pgtest.URL(t))
	s := openTest(t, url)
	s.beforeCommit = func(pgx.Tx) { proxy.arm(false) }
	if err := s.CreateRun(store.WithOpID(ctx, "op_lost"), &store.Run{ID: "run_l", Target: "t"}); err != nil {
		t.Fatalf("create whose commit reply was lost: %v, want it resolved committed", err)
	}
	s.beforeCommit = nil
	select {
	case <-proxy.cut:
	default:
		t.Fatal("the proxy never cut the connection: the test did not lose the reply")
	}
	if o, err := s.Outcome(ctx, "op_lost"); err != nil || o != store.Committed {
		t.Fatalf("Outcome = %v, %v", o, err)
	}
	if r, err := s.GetRun(ctx, "run_l"); err != nil || r.Revision != 1 {
		t.Fatalf("GetRun = %+v, %v", r, err)
	}
}

// The reply to COMMIT is lost and the database stays out of reach: the
// write is Unknown, the store pauses writing (Health) until it can look
// the operation up, then resumes and answers Outcome.
func TestUnknownOutcomePausesUntilResolved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy, url := newCutProxy(t, pgtest.URL(t))
	s := openTest(t, url)
	s.resolveWait = 100 * time.Millisecond // the database stays away: do not wait long
	changed := s.HealthChanged()
	s.beforeCommit = func(pgx.Tx) { proxy.arm(true) }
	err := s.CreateRun(store.WithOpID(ctx, "op_unknown"), &store.Run{ID: "run_u", Target: "t"})
	s.beforeCommit = nil
	var ce *store.CommitError
	if !errors.As(err, &ce) || ce.Outcome != store.Unknown {
		t.Fatalf("create with the database unreachable: %v, want a CommitError unknown", err)
	}
	<-changed
	h := s.Health()
	if !store.IsUnavailable(h.Err) {
		t.Fatalf("Health after an unknown outcome: %+v, want paused", h)
	}
	if o, _ := s.Outcome(ctx, "op_unknown"); o != store.Unknown {
		t.Fatalf("Outcome while unresolved = %v, want unknown", o)
	}
	if err := s.CreateRun(ctx, &store.Run{ID: "run_other", Target: "t"}); !store.IsUnavailable(err) {
		t.Fatalf("a write while paused: %v, want it refused", err)
	}
	changed = s.HealthChanged()
	proxy.allow()
	<-changed
	if h := s.Health(); h.Err != nil {
		t.Fatalf("Health after the database came back: %+v", h)
	}
	if o, err := s.Outcome(ctx, "op_unknown"); err != nil || o != store.Committed {
		t.Fatalf("Outcome once resolved = %v, %v", o, err)
	}
	if err := s.CreateRun(ctx, &store.Run{ID: "run_other", Target: "t"}); err != nil {
		t.Fatalf("a write after resuming: %v", err)
	}
}
