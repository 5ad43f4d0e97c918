package cli

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workspace"
)

// leasesConfigured reports whether ws's config selects leases mode (the
// coordination: section, or a shared store), where a worker holds the
// store's worker lease and no lock file.
func leasesConfigured(ws *workspace.Workspace) bool {
	s, err := host.LoadSettings(ws)
	if err != nil {
		return false
	}
	switch s.Coordination.Mode {
	case runs.CoordinationLeases:
		return true
	case runs.CoordinationLocks:
		return false
	}
	sh, err := s.Shared()
	return err == nil && sh != nil
}

// stopLeasedWorker stops the worker of a host in leases mode: the holder
// of the store's worker lease, when it is a live process of this machine
// (its peer registration names this host, its pid and its start time, so
// a reused pid is never signalled). It waits up to wait for the lease to
// be let go or the process to end.
func stopLeasedWorker(ctx context.Context, h *host.Host, wait time.Duration, rep *workerStop) error {
	if !h.Leases() {
		return nil
	}
	l, err := h.Store.GetLease(ctx, "worker")
	if errors.Is(err, store.ErrNotFound) || err == nil && !l.Held(time.Now()) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop worker: %w", err)
	}
	ps, ok := h.Store.(store.PeerStore)
	if !ok {
		return fmt.Errorf("stop worker: the worker lease is held by pid %d, and this store keeps no peers to check it against", l.PID)
	}
	peers, err := ps.LivePeers(ctx, time.Now(), maxPeersShown)
	if err != nil {
		return fmt.Errorf("stop worker: %w", err)
	}
	var p *store.Peer
	for i := range peers {
		c := &peers[i]
		if c.PID == l.PID && c.Hostname != "" && c.Hostname == locks.Hostname() && !locks.ProcessGone(c.Hostname, c.PID, c.Started) {
			p = c
		}
	}
	if p == nil {
		return fmt.Errorf("stop worker: the worker lease is held by pid %d, which is not a live process of this machine (%s): run mcp-host worker stop on the machine it runs on", l.PID, locks.Hostname())
	}
	rep.PID = p.PID
	if err := syscall.Kill(p.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop worker pid %d: %w", p.PID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		cur, err := h.Store.GetLease(ctx, "worker")
		if locks.ProcessGone(p.Hostname, p.PID, p.Started) || err == nil && (cur.Holder != l.Holder || !cur.Held(time.Now())) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("worker pid %d did not stop within %s (kill -KILL %d stops it at once; its runs are adopted)", p.PID, wait, p.PID)
		case <-tick.C:
		}
	}
	rep.Stopped, rep.Message = true, fmt.Sprintf("stopped worker pid %d for %s", p.PID, rep.Workspace)
	return nil
}
