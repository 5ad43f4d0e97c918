package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

// StalledRun is a run that is not settled and that no process executes
// right now, with why (Run.Stalled's text).
type StalledRun struct {
	ID     string          `json:"id"`
	Target string          `json:"target"`
	Status store.RunStatus `json:"status"`
	Note   string          `json:"note"`
}

// stallCheck decides, for one workspace, whether a run waits on nobody.
// The run lock is the truth about its owner (not the pid): a running run
// whose lock is free has no owner, once a second read shows it unchanged
// (the owner may have let go of it a moment ago, after a write).
type stallCheck struct {
	st       store.RunStore
	isHeld   func(runID string) (bool, error)
	locksDir string // for the worker lock; "" : no hint about workers
}

// note returns why r makes no progress, or "" when a process has it (or
// it is settled, or waits for an answer or a wake time).
func (c stallCheck) note(ctx context.Context, r *store.Run) string {
	var what string
	switch r.Status {
	case store.RunQueued:
		if held, err := c.isHeld(r.ID); err != nil || held {
			return "" // a peer is claiming it
		}
		what = fmt.Sprintf("queued since %s, waiting for a peer to start it", stamp(r.CreatedAt))
	case store.RunRunning:
		held, err := c.isHeld(r.ID)
		if err != nil || held {
			return ""
		}
		again, err := c.st.GetRun(ctx, r.ID)
		if err != nil || again.Revision != r.Revision {
			return ""
		}
		if r.OwnerPID != 0 {
			what = fmt.Sprintf("owner pid %d gone since %s, waiting for a peer", r.OwnerPID, stamp(r.UpdatedAt))
		} else {
			what = fmt.Sprintf("released since %s, waiting for a peer to resume it", stamp(r.UpdatedAt))
		}
	default:
		return ""
	}
	return what + c.peerHint()
}

// peerHint says whether a worker is there to pick the run up.
func (c stallCheck) peerHint() string {
	if c.locksDir == "" {
		return ""
	}
	h, held, err := locks.Describe(c.locksDir, "worker")
	if err == nil && !held {
		h.PID, held = leasedWorker(c.st) // a lease-only worker holds no lock file
	}
	switch {
	case err != nil:
		return ""
	case held && h.PID != 0:
		return fmt.Sprintf(" (worker pid %d is alive and should adopt it)", h.PID)
	case held:
		return " (a worker is alive and should adopt it)"
	}
	return "; no mcp-host worker is alive: start one with `mcp-host worker` (any mcp-host serve for this workspace also adopts it)"
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// stallCheck is the engine's check; none for an engine whose runs live in
// this process only.
func (e *Engine) stallCheck() *stallCheck {
	if e.opts.InMemory {
		return nil
	}
	return &stallCheck{st: e.st, isHeld: e.locker.isHeld, locksDir: e.ws.LocksDir()}
}

// noteStalls fills Stalled on runs nobody executes.
func (e *Engine) noteStalls(ctx context.Context, vs ...*Run) {
	c := e.stallCheck()
	if c == nil {
		return
	}
	for _, v := range vs {
		v.Stalled = c.note(ctx, &v.Run)
	}
}

// Stalled lists the runs of a workspace that no process executes (queued,
// or running with their owner gone), newest first, at most limit, reading
// st and the lock files in locksDir without taking any lock for long: for
// `mcp-host status`, which looks at workspaces without opening a host.
func Stalled(ctx context.Context, st store.RunStore, locksDir string, limit int) ([]StalledRun, error) {
	rs, _, err := st.ListRuns(ctx, store.RunFilter{Status: []store.RunStatus{store.RunQueued, store.RunRunning}, Limit: limit})
	if err != nil {
		return nil, err
	}
	l := &fileLocker{dir: locksDir}
	defer l.close()
	c := stallCheck{st: st, isHeld: withLeases(st, l.isHeld), locksDir: locksDir}
	out := []StalledRun{}
	for _, r := range rs {
		if note := c.note(ctx, r); note != "" {
			out = append(out, StalledRun{ID: r.ID, Target: r.Target, Status: r.Status, Note: note})
		}
	}
	return out, nil
}
