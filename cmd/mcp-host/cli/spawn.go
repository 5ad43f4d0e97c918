package cli

import (
	"fmt"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/store"
)

// ensureWorker makes sure a peer will execute the work a command leaves
// behind (what names it: "run run_…"): unless a live process holds
// locks/worker, it starts a background `mcp-host worker` and says so on
// stderr. A host whose state is in memory has nothing to hand over.
func (e *env) ensureWorker(h *host.Host, what string) {
	if h.InMemory() || e.dryRun {
		return
	}
	pid, err := startWorker(e, h)
	switch {
	case err != nil:
		fmt.Fprintf(e.stdio.Err, "mcp-host: %s waits for a peer, and no worker could be started (%v); start one with: mcp-host worker\n", what, err)
	case pid > 0:
		fmt.Fprintf(e.stdio.Err, "mcp-host: started a background worker (pid %d) for %s; its log is %s\n", pid, what, h.Workspace.LogPath())
	default:
		e.log.Info("a worker is alive: it executes the work", "what", what)
	}
}

// firedWork makes sure a peer runs what a fire left: its queued run, or
// the run buffered behind the previous one.
func (e *env) firedWork(h *host.Host, rep *automations.FireReport) {
	switch {
	case rep.Outcome == store.FireQueued && rep.RunID != "":
		e.ensureWorker(h, "run "+rep.RunID)
	case rep.Outcome == store.FireBuffered:
		e.ensureWorker(h, "automation "+rep.Key)
	}
}
