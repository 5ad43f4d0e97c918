package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
)

// writeReq is one operation waiting for the writer goroutine.
type writeReq struct {
	ctx  context.Context
	op   string
	kind string
	fn   func(tx *sql.Tx) error
	done chan error
}

// write runs fn as one operation inside a write transaction, possibly
// together with other operations (group commit), and returns once the
// outcome is known. fn runs on the writer goroutine; it must only use tx,
// and values it computes are valid only when write returns nil.
//
// An error returned by fn is returned as is, and nothing fn wrote is kept.
// A commit failure returns a *store.CommitError.
func (s *Store) write(ctx context.Context, kind string, fn func(tx *sql.Tx) error) error {
	if s.opts.ReadOnly {
		return fmt.Errorf("%s: store %s is open read-only", kind, s.path)
	}
	if err := s.health.get().Err; err != nil {
		return err
	}
	req := &writeReq{ctx: ctx, op: store.OpID(ctx), kind: kind, fn: fn, done: make(chan error, 1)}
	s.mu.RLock()
	if s.closing {
		s.mu.RUnlock()
		return store.ErrClosed
	}
	s.reqs <- req
	s.mu.RUnlock()
	// Wait for the outcome even if ctx ends: once queued, the operation
	// may commit, and the caller must not mistake that for a failure.
	return <-req.done
}

func (s *Store) writer() {
	defer close(s.done)
	batch := make([]*writeReq, 0, s.opts.MaxBatch)
	for req := range s.reqs {
		batch = append(batch[:0], req)
	fill:
		for len(batch) < s.opts.MaxBatch {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		s.commit(batch, time.Now())
		s.prepareQueued()
		if s.afterCommit != nil {
			s.afterCommit()
		}
		if !s.recoverWrites() {
			return
		}
	}
}

// commit runs a batch in one transaction, each request in a savepoint.
func (s *Store) commit(batch []*writeReq, start time.Time) {
	results := make([]error, len(batch))
	finish := func() {
		for i, r := range batch {
			r.done <- results[i]
		}
	}
	defer finish()
	refuse := func(err error) {
		for i := range batch {
			results[i] = err
		}
	}
	if err := s.health.get().Err; err != nil {
		refuse(err)
		return
	}
	// Never write into a database that is no longer the one at its path.
	if err := s.checkFile(); err != nil {
		refuse(err)
		return
	}
	// The transaction is not tied to any caller's context: a caller that
	// gives up must not roll back the others' work halfway through commit.
	bg := context.Background()
	tx, err := s.begin(bg)
	if err != nil {
		if isDiskFault(err) {
			s.pause(err)
		}
		for i, r := range batch {
			results[i] = &store.CommitError{OpID: r.op, Outcome: store.NotCommitted, Err: fmt.Errorf("begin: %w", err)}
		}
		return
	}
	defer s.batchTx(tx)()
	now := time.Now().UnixMilli()
	applied := 0
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		if err := s.apply(bg, tx, r, now); err != nil {
			var abort *abortError
			if isDiskFault(err) {
				s.pause(err)
			}
			if errors.As(err, &abort) {
				// The savepoint could not be rolled back: the whole
				// transaction is suspect, so nothing in it is kept.
				tx.Rollback()
				for j, r := range batch {
					results[j] = &store.CommitError{OpID: r.op, Outcome: store.NotCommitted, Err: abort.err}
				}
				return
			}
			results[i] = err
			continue
		}
		applied++
	}
	if applied == 0 {
		tx.Rollback()
		return
	}
	if err := tx.Commit(); err != nil {
		// The commit may or may not have reached the disk. Pause writing
		// and look the operation up on a fresh connection: every
		// operation of the batch shares its fate.
		s.pause(err)
		s.settle(batch, results, err)
		return
	}
	s.counters.committed(applied, start)
	// A database deleted or replaced during the commit: what it wrote is
	// not at the path any more, so nothing is acknowledged.
	if ferr := s.checkFile(); ferr != nil {
		for i, r := range batch {
			if results[i] == nil {
				results[i] = &store.CommitError{OpID: r.op, Outcome: store.Unknown, Err: ferr}
			}
		}
	}
}

// settle answers the callers of a batch whose commit failed with err, as
// definitely as the disk allows.
func (s *Store) settle(batch []*writeReq, results []error, err error) {
	outcome, known, tried := store.Unknown, false, false
	for i, r := range batch {
		if results[i] != nil {
			continue
		}
		switch {
		case !tried:
			outcome, known = s.settleUnknown(r.op)
			tried = true
		case !known:
			s.pending[r.op] = true
		}
		switch outcome {
		case store.Committed:
		case store.NotCommitted:
			results[i] = &store.CommitError{OpID: r.op, Outcome: outcome, Err: s.health.get().Err}
		default:
			results[i] = &store.CommitError{OpID: r.op, Outcome: store.Unknown, Err: err}
		}
	}
}

type abortError struct{ err error }

func (e *abortError) Error() string { return e.err.Error() }

var (
	qSavepoint  = prepared("SAVEPOINT op")
	qRollbackTo = prepared("ROLLBACK TO op")
	qRelease    = prepared("RELEASE op")
	qRecordOp   = prepared("INSERT INTO operations (id, kind, at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING")
)

func (s *Store) apply(ctx context.Context, tx *sql.Tx, r *writeReq, now int64) (err error) {
	if _, err := s.exec(ctx, tx, qSavepoint); err != nil {
		return &abortError{fmt.Errorf("savepoint: %w", err)}
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: panic: %v", r.kind, p)
		}
		if err != nil {
			_, rerr := s.exec(ctx, tx, qRollbackTo)
			if rerr == nil {
				_, rerr = s.exec(ctx, tx, qRelease)
			}
			if rerr != nil {
				err = &abortError{fmt.Errorf("roll back %s: %w (after %v)", r.kind, rerr, err)}
			}
			return
		}
		if _, rerr := s.exec(ctx, tx, qRelease); rerr != nil {
			err = &abortError{fmt.Errorf("release savepoint: %w", rerr)}
		}
	}()
	if err := r.fn(tx); err != nil {
		return err
	}
	res, err := s.exec(ctx, tx, qRecordOp, r.op, r.kind, now)
	if err != nil {
		return fmt.Errorf("record operation %s: %w", r.op, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("operation %s: %w (it was committed before; do not repeat it)", r.op, store.ErrExists)
	}
	return nil
}
