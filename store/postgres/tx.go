package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// How long a write whose commit outcome is unknown waits for the answer
// before it pauses the store, and how often the paused store asks again.
const (
	defaultResolveWait = 5 * time.Second
	resolveEvery       = 100 * time.Millisecond
	retryPaused        = time.Second
)

// qRecordOp records the operation in its own transaction and returns that
// transaction's id, by which an unknown commit is resolved.
const qRecordOp = "INSERT INTO operations (id, kind, at) VALUES ($1, $2, now()) ON CONFLICT (id) DO NOTHING RETURNING pg_current_xact_id()::text"

// write runs fn as one operation: one transaction that also records the
// operation's id (store.OpID(ctx)). An error returned by fn is returned
// as is, and nothing fn wrote is kept. A commit that fails returns a
// *store.CommitError, except one found committed after all (nil).
//
// fn must stop at its first error: PostgreSQL refuses every statement of
// a transaction after a failed one.
func (s *Store) write(ctx context.Context, kind string, fn func(tx pgx.Tx) error) error {
	if err := s.health.refusal(); err != nil {
		return err
	}
	op := store.OpID(ctx)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return &store.CommitError{OpID: op, Outcome: store.NotCommitted, Err: fmt.Errorf("begin %s: %w", kind, err)}
	}
	// A caller that gives up must not cut the commit halfway: after
	// COMMIT is sent, the outcome is the database's.
	bg := context.WithoutCancel(ctx)
	defer tx.Rollback(bg) // a no-op once committed
	if err := fn(tx); err != nil {
		return err
	}
	var xid string
	err = tx.QueryRow(ctx, qRecordOp, op, kind).Scan(&xid)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("operation %s: %w (it was committed before; do not repeat it)", op, store.ErrExists)
	case err != nil:
		return fmt.Errorf("record operation %s: %w", op, err)
	}
	if s.beforeCommit != nil {
		s.beforeCommit(tx)
	}
	if err := tx.Commit(bg); err != nil {
		return s.commitFailed(bg, op, xid, err)
	}
	return nil
}

// commitFailed decides what a failed COMMIT did. The server's refusal of
// the COMMIT (an ERROR it sent back: a deferred check, a serialization
// failure) rolled the transaction back. A broken connection, or a FATAL
// one (pg_terminate_backend, a server shutdown), may come after the
// commit was durable: the outcome is unknown until the operation is
// looked up.
func (s *Store) commitFailed(ctx context.Context, op, xid string, err error) error {
	var pgErr *pgconn.PgError
	refused := errors.As(err, &pgErr) && pgErr.Severity != "FATAL" && pgErr.Severity != "PANIC"
	if refused || errors.Is(err, pgx.ErrTxCommitRollback) {
		return &store.CommitError{OpID: op, Outcome: store.NotCommitted, Err: err}
	}
	rctx, cancel := context.WithTimeout(ctx, s.resolveWait)
	defer cancel()
	switch outcome, rerr := s.resolve(rctx, xid, op); outcome {
	case store.Committed:
		s.log.Warn("commit outcome was unknown: committed", "op", op, "err", err)
		return nil
	case store.NotCommitted:
		return &store.CommitError{OpID: op, Outcome: store.NotCommitted, Err: err}
	default:
		err = errors.Join(err, rerr)
	}
	paused := &store.UnavailableError{Folder: "database schema " + s.schema, Reason: store.ReasonDiskError,
		Err: fmt.Errorf("the outcome of operation %s is unknown: %w", op, err)}
	if s.health.pause(op, xid, paused) {
		s.log.Warn("store paused: commit outcome unknown", "op", op, "err", err)
		s.resolving.Add(1)
		go s.resolvePending()
	}
	return &store.CommitError{OpID: op, Outcome: store.Unknown, Err: err}
}

// resolve waits until transaction xid is no longer in progress, then
// looks operation op up: the operations table is the truth. It returns
// Unknown (and why) when ctx ends first.
func (s *Store) resolve(ctx context.Context, xid, op string) (store.Outcome, error) {
	for {
		var status *string
		err := s.pool.QueryRow(ctx, "SELECT pg_xact_status($1::xid8)", xid).Scan(&status)
		if err == nil && (status == nil || *status != "in progress") {
			o, err := s.lookUpOp(ctx, op)
			if err == nil {
				return o, nil
			}
		}
		if err == nil {
			err = fmt.Errorf("transaction %s is still in progress", xid)
		}
		t := s.clk.NewTimer(resolveEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return store.Unknown, fmt.Errorf("resolve operation %s: %w (last: %v)", op, ctx.Err(), err)
		case <-t.C():
		}
	}
}

// resolvePending resolves the paused store's unknown operations until
// none is left (writing resumes) or the store closes.
func (s *Store) resolvePending() {
	defer s.resolving.Done()
	for {
		for op, xid := range s.health.unresolved() {
			ctx, cancel := context.WithTimeout(context.Background(), s.resolveWait)
			o, err := s.resolve(ctx, xid, op)
			cancel()
			if o == store.Unknown {
				s.log.Warn("commit outcome still unknown", "op", op, "err", err)
				continue
			}
			s.log.Info("commit outcome resolved", "op", op, "outcome", o)
			s.health.resolved(op)
		}
		if len(s.health.unresolved()) == 0 {
			s.log.Info("store resumed: unknown commit outcomes resolved")
			return
		}
		t := s.clk.NewTimer(retryPaused)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-t.C():
		}
	}
}
