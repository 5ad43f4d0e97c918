package store

import (
	"context"
	"fmt"
	"time"
)

// Peers are the host processes (serve, worker) alive on a workspace,
// whatever machine they run on: each registers itself and renews its
// registration by heartbeat, so `status` can list them from any host
// even when the store is shared by several machines and lock files tell
// nothing about the others.

// Peer is one host process as it registered itself.
type Peer struct {
	ID       string    `json:"id"` // a fresh id per process
	Hostname string    `json:"hostname"`
	PID      int       `json:"pid"`
	Started  time.Time `json:"started"` // when the process started
	Since    time.Time `json:"since"`   // its first registration
	Renewed  time.Time `json:"renewed"` // its latest heartbeat
	Expires  time.Time `json:"expires"` // Renewed plus the heartbeat's length
}

// Live reports whether the peer's registration has not expired at now.
func (p *Peer) Live(now time.Time) bool { return p != nil && now.Before(p.Expires) }

// PeerParams register or renew a peer.
type PeerParams struct {
	ID       string
	Hostname string
	PID      int
	Started  time.Time
	Now      time.Time     // zero: the current time
	TTL      time.Duration // how long the registration lasts unrenewed; required
}

// PeerStore keeps the live peers. Methods are safe for concurrent use from
// many goroutines and processes.
type PeerStore interface {
	// RegisterPeer registers p.ID or renews its registration (its Since is
	// kept), and forgets peers whose registration expired before p.Now.
	// It returns the peer as stored.
	RegisterPeer(ctx context.Context, p PeerParams) (Peer, error)
	// RemovePeer forgets a peer (it ends); an unknown id is no error.
	RemovePeer(ctx context.Context, id string) error
	// LivePeers returns the peers whose registration has not expired at
	// now, oldest first, at most limit (1 to MaxListLimit).
	LivePeers(ctx context.Context, now time.Time, limit int) ([]Peer, error)
}

// PlanPeer returns the peer to store for p, given its current
// registration cur (nil: none).
func PlanPeer(cur *Peer, p PeerParams) (Peer, error) {
	if p.ID == "" || p.TTL <= 0 {
		return Peer{}, fmt.Errorf("register peer %q: an id and a positive length are required", p.ID)
	}
	now := Millis(At(p.Now))
	next := Peer{ID: p.ID, Hostname: p.Hostname, PID: p.PID, Started: Millis(p.Started), Since: now, Renewed: now, Expires: Millis(now.Add(p.TTL))}
	if cur != nil {
		next.Since = cur.Since
	}
	return next, nil
}

// CheckPeerLimit refuses a LivePeers limit out of range.
func CheckPeerLimit(limit int) error {
	if limit < 1 || limit > MaxListLimit {
		return fmt.Errorf("list peers: limit %d; use 1 to %d", limit, MaxListLimit)
	}
	return nil
}
