// Package memory is an in-process store.Store for dry runs and tests.
// Nothing it holds survives the process. It follows the same contract as
// store/sqlite and passes the same conformance suite.
package memory

import (
	"context"
	"fmt"
	"sync"

	"github.com/cairnhq/cairn/store"
)

var _ store.Store = (*Store)(nil)

// Store keeps everything in maps behind one mutex.
type Store struct {
	mu     sync.Mutex
	closed bool
	ops    map[string]bool

	runs       runsData
	autos      automationsData
	sessions   sessionsData
	leases     map[string]store.Lease // by name; see leases.go
	peers      map[string]store.Peer  // by id; see peers.go
	outbox     outboxData
	audit      []*store.AuditEntry // by Seq
	auditSeq   int64
	journals   journalsData      // see journals.go
	memFiles   memoryFiles       // see memoryfiles.go
	stepStates map[string][]byte // by run id; see stepstates.go
}

// New returns an empty store.
func New() *Store {
	s := &Store{ops: make(map[string]bool)}
	s.runs.init()
	s.autos.init()
	s.sessions.init()
	s.outbox.init()
	return s
}

// write runs fn under the lock as one operation. fn must check everything
// before it changes anything: there is no rollback.
func (s *Store) write(ctx context.Context, kind string, fn func() error) error {
	op := store.OpID(ctx)
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	if s.ops[op] {
		return fmt.Errorf("operation %s: %w (it was committed before; do not repeat it)", op, store.ErrExists)
	}
	if err := fn(); err != nil {
		return err
	}
	s.ops[op] = true
	return nil
}

// read runs fn under the lock.
func (s *Store) read(fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	return fn()
}

func (s *Store) Outcome(ctx context.Context, opID string) (store.Outcome, error) {
	var o store.Outcome
	err := s.read(func() error {
		if s.ops[opID] {
			o = store.Committed
		}
		return nil
	})
	return o, err
}

func (s *Store) Counts(ctx context.Context) (store.Counts, error) {
	var c store.Counts
	err := s.read(func() error {
		c = store.Counts{Runs: s.runs.count(), Automations: s.autos.count(), Sessions: s.sessions.count()}
		return nil
	})
	return c, err
}

func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
