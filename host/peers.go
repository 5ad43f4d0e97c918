package host

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
)

// A started host registers itself as a live peer of its workspace
// (store.PeerStore) and renews that by heartbeat until Stop, so `status`
// lists the peers of every machine. On one machine a peer that died is
// told by its pid (status checks the pids of its own machine), so the
// heartbeat is slow there, a write every 30 s; in leases mode it goes at
// the leases' pace.
const (
	peerLocksTTL   = 90 * time.Second
	peerLocksRenew = 30 * time.Second
)

// peerBeat is a host's registration and its heartbeat.
type peerBeat struct {
	st         store.PeerStore
	clk        clock.Clock
	params     store.PeerParams
	renew      time.Duration
	log        interface{ Warn(string, ...any) }
	stop, done chan struct{}
	once       sync.Once
}

// RegisterPeer registers this process as a live peer of the workspace
// and keeps it registered until Stop or EndPeer (Start does it; a worker,
// which starts the host's parts one by one, calls it). It returns nil: a
// failed registration is logged and retried at the next heartbeat.
func (h *Host) RegisterPeer(ctx context.Context) error {
	if h.peer.Load() == nil {
		if p := h.startPeer(ctx, h.clk); p != nil && !h.peer.CompareAndSwap(nil, p) {
			p.end()
		}
	}
	return nil
}

// EndPeer ends the registration RegisterPeer made.
func (h *Host) EndPeer() { h.peer.Load().end() }

// startPeer registers the host and starts its heartbeat; nil when the
// store keeps no peers or the host's state is in memory.
func (h *Host) startPeer(ctx context.Context, clk clock.Clock) *peerBeat {
	ps, ok := h.Store.(store.PeerStore)
	if !ok || h.InMemory() {
		return nil
	}
	ttl, renew := peerLocksTTL, peerLocksRenew
	if h.Leases() {
		t := h.Settings.Coordination.times()
		ttl, renew = t.Length, t.Renew
		if ttl <= 0 {
			ttl = runs.DefaultRunLease
		}
		if renew <= 0 {
			renew = min(runs.DefaultRenew, ttl/5)
		}
	}
	p := &peerBeat{st: ps, clk: clk, renew: renew, log: h.log, stop: make(chan struct{}), done: make(chan struct{}),
		params: store.PeerParams{ID: ids.New("peer"), Hostname: locks.Hostname(), PID: os.Getpid(), Started: locks.SelfStart(), TTL: ttl}}
	p.beat(ctx)
	go p.loop(clk.NewTimer(renew))
	return p
}

func (p *peerBeat) beat(ctx context.Context) {
	p.params.Now = p.clk.Now()
	if _, err := p.st.RegisterPeer(ctx, p.params); err != nil && ctx.Err() == nil {
		p.log.Warn("register peer", "err", err)
	}
}

func (p *peerBeat) loop(t clock.Timer) {
	defer close(p.done)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C():
		}
		p.beat(context.Background())
		t.Reset(p.renew)
	}
}

// end stops the heartbeat and removes the registration. It is
// idempotent, and a no-op on a nil peerBeat.
func (p *peerBeat) end() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		close(p.stop)
		<-p.done
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.st.RemovePeer(ctx, p.params.ID); err != nil {
			p.log.Warn("remove peer", "err", err)
		}
	})
}
