package cli

import (
	"fmt"

	"github.com/cairnhq/cairn/host"
)

// ensureWorker makes sure a peer will execute the work a command leaves
// behind (what names it: "run run_…"): unless a live process holds
// locks/worker, it starts a background `mcp-host worker` and says so on
// stderr. A host whose state is in memory has nothing to hand over.
func (e *env) ensureWorker(h *host.Host, what string) {
	if h.InMemory() || e.dryRun {
		return
	}
	pid, err := startWorker(e, h.Workspace)
	switch {
	case err != nil:
		fmt.Fprintf(e.stdio.Err, "mcp-host: %s waits for a peer, and no worker could be started (%v); start one with: mcp-host worker\n", what, err)
	case pid > 0:
		fmt.Fprintf(e.stdio.Err, "mcp-host: started a background worker (pid %d) for %s; its log is %s\n", pid, what, h.Workspace.LogPath())
	default:
		e.log.Info("a worker is alive: it executes the work", "what", what)
	}
}
