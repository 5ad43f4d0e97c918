package postgres

import (
	"sync"
	"time"

	"github.com/cairnhq/cairn/store"
)

// health is whether the store writes now. Writing pauses while a commit's
// outcome is unknown and could not be looked up (the database was out of
// reach): the store resolves it in the background and then resumes, so
// no write is ever acknowledged on top of an unknown one.
type health struct {
	mu      sync.Mutex
	closed  bool
	pending map[string]string // op id -> its transaction id, outcome unknown
	cur     store.Health
	changed chan struct{}
}

func (h *health) init(now time.Time) {
	h.pending = make(map[string]string)
	h.cur = store.Health{Since: now}
	h.changed = make(chan struct{})
}

// refusal is why a write must not start now: ErrClosed, the pause, or nil.
func (h *health) refusal() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return store.ErrClosed
	}
	return h.cur.Err
}

func (h *health) isPending(op string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.pending[op]
	return ok
}

// pause records op (transaction xid) as unknown and pauses writing with
// the error err. It reports whether writing was running before.
func (h *health) pause(op, xid string, err error) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending[op] = xid
	if h.cur.Err != nil {
		return false
	}
	h.set(store.Health{Err: err, Since: time.Now()})
	return true
}

// unresolved returns the pending operations.
func (h *health) unresolved() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]string, len(h.pending))
	for op, xid := range h.pending {
		out[op] = xid
	}
	return out
}

// resolved forgets op; writing resumes once nothing is pending.
func (h *health) resolved(op string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.pending, op)
	if len(h.pending) == 0 && h.cur.Err != nil {
		h.set(store.Health{Since: time.Now()})
	}
}

func (h *health) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
}

// set changes the state and wakes the watchers; the caller holds h.mu.
func (h *health) set(next store.Health) {
	h.cur = next
	close(h.changed)
	h.changed = make(chan struct{})
}

// Health returns whether the store writes now.
func (s *Store) Health() store.Health {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	return s.health.cur
}

// HealthChanged returns a channel closed at the next change of Health.
func (s *Store) HealthChanged() <-chan struct{} {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	return s.health.changed
}
