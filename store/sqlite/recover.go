package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// A commit whose outcome is unknown (the disk filled up or failed during
// it) pauses writing. The writer goroutine then reopens its connection,
// looks the operations up by id (a read, which a full disk allows) and
// answers their callers; it tries a small write with backoff until one
// commits, and only then accepts writes again. Meanwhile every write is
// refused at once with the *store.UnavailableError of Health.

// Backoff between trial writes while paused.
const (
	retryFirst = 100 * time.Millisecond
	retryMax   = 2 * time.Second
)

// recoverWrites runs on the writer goroutine while the store is paused:
// it refuses the writes that arrive and, with backoff, tries to resume.
// It returns when the store writes again, stopped for good, or is closing
// (then false: the request channel is closed).
func (s *Store) recoverWrites() bool {
	delay := retryFirst
	for {
		h := s.health.get()
		if h.Err == nil || h.Fatal {
			return true
		}
		t := s.clk.NewTimer(delay)
	wait:
		for {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					t.Stop()
					return false
				}
				r.done <- h.Err
			case <-t.C():
				break wait
			}
		}
		err := s.resume()
		switch {
		case err == nil:
			if s.health.set(nil, false, s.clk.Now()) {
				s.log.Info("state store writes again", "paused_for", s.clk.Now().Sub(h.Since).Round(time.Millisecond))
			}
		case isDiskFault(err):
			s.pause(err)
		}
		if s.afterRetry != nil {
			s.afterRetry() // after Health reflects the trial
		}
		if err == nil {
			return true
		}
		delay = min(delay*2, retryMax)
	}
}

// resume reopens the write connection, resolves the operations whose
// outcome is still unknown and commits a trial write.
func (s *Store) resume() error {
	if err := s.checkFile(); err != nil {
		return err
	}
	if err := s.reopenWriter(); err != nil {
		return err
	}
	if err := s.resolvePending(); err != nil {
		return err
	}
	return s.trialWrite()
}

// reopenWriter replaces the write connection: after a failed commit it may
// still be inside the transaction SQLite could not finish.
func (s *Store) reopenWriter() error {
	for q, st := range s.wstmts {
		st.Close()
		delete(s.wstmts, q)
	}
	for q, st := range s.wpending {
		st.Close()
		delete(s.wpending, q)
	}
	if err := s.w.Close(); err != nil {
		s.log.Warn("close the failed write connection", "err", err)
	}
	w, err := s.openWriter()
	if err != nil {
		return err
	}
	s.w = w
	return nil
}

// openWriter opens the one write connection.
func (s *Store) openWriter() (*sql.DB, error) {
	w, err := sql.Open("sqlite", dsn(s.path, s.opts, true))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", s.path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	return w, nil
}

// resolve looks up whether op committed, after a failed commit.
func (s *Store) resolve(op string) (store.Outcome, error) {
	o, err := s.Outcome(context.Background(), op)
	if err == nil {
		s.log.Info("resolved the outcome of an operation", "op", op, "outcome", o.String())
	}
	return o, err
}

// resolvePending resolves the operations whose callers were told Unknown.
func (s *Store) resolvePending() error {
	for op := range s.pending {
		if _, err := s.resolve(op); err != nil {
			return err
		}
		delete(s.pending, op)
	}
	return nil
}

var (
	qTrialInsert = "INSERT INTO operations (id, kind, at) VALUES (?, 'trial', 0)"
	qTrialDelete = "DELETE FROM operations WHERE id = ?"
)

// trialWrite commits a write that changes nothing in the end but needs
// room on the disk for its pages.
func (s *Store) trialWrite() error {
	tx, err := s.begin(context.Background())
	if err != nil {
		return err
	}
	defer tx.Rollback()
	id := ids.New("trial")
	if _, err := tx.Exec(qTrialInsert, id); err != nil {
		return err
	}
	if _, err := tx.Exec(qTrialDelete, id); err != nil {
		return err
	}
	return tx.Commit()
}

// settleUnknown is called after a commit failed: it reopens the write
// connection and looks op up, so that callers get a definite answer when
// the disk allows a read. ok is false when the outcome stays unknown;
// then op is kept for resume to resolve.
func (s *Store) settleUnknown(op string) (o store.Outcome, ok bool) {
	if err := s.reopenWriter(); err == nil {
		if o, err := s.resolve(op); err == nil {
			return o, true
		}
	}
	if s.pending == nil {
		s.pending = map[string]bool{}
	}
	s.pending[op] = true
	return store.Unknown, false
}
