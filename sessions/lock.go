package sessions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/locks"
)

// lock keeps compactions, deletes and recoveries of one session apart:
// within this process by a mutex per session, across processes by the
// lock file locks/session-<id> (when the Manager has a LocksDir). It
// waits at most Options.LockTimeout for another holder.
func (m *Manager) lock(ctx context.Context, sessionID string) (unlock func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, m.opts.LockTimeout)
	defer cancel()
	release, err := m.mu.lock(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("wait for session %s: another operation of this process holds it: %w", sessionID, err)
	}
	if m.opts.LocksDir == "" {
		return release, nil
	}
	l, err := locks.Acquire(ctx, m.opts.LocksDir, lockName(sessionID))
	if err != nil {
		release()
		return nil, fmt.Errorf("wait for session %s: %w (another mcp-host is compacting or deleting it)", sessionID, err)
	}
	return func() {
		l.Unlock()
		release()
	}, nil
}

// lockName is "session-<id>", or a digest of the id when that would be
// longer than ids allow.
func lockName(sessionID string) string {
	name := "session-" + sessionID
	if len(name) <= ids.MaxLen {
		return name
	}
	sum := sha256.Sum256([]byte(sessionID))
	return "session-" + hex.EncodeToString(sum[:16])
}

// keyedMutex is a mutex per key whose Lock can be abandoned with a context.
type keyedMutex struct {
	mu   sync.Mutex
	keys map[string]*keyEntry
}

type keyEntry struct {
	ch   chan struct{} // holds a token while locked
	refs int
}

func (k *keyedMutex) lock(ctx context.Context, key string) (release func(), err error) {
	k.mu.Lock()
	if k.keys == nil {
		k.keys = make(map[string]*keyEntry)
	}
	e := k.keys[key]
	if e == nil {
		e = &keyEntry{ch: make(chan struct{}, 1)}
		k.keys[key] = e
	}
	e.refs++
	k.mu.Unlock()
	drop := func() {
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.keys, key)
		}
		k.mu.Unlock()
	}
	select {
	case e.ch <- struct{}{}:
	case <-ctx.Done():
		drop()
		return nil, context.Cause(ctx)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-e.ch
			drop()
		})
	}, nil
}
