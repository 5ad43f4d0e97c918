package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/store"
)

// Honest schedules: what the commands say about when automations fire is
// computed at once from the records (not only by a running scheduler),
// shown in each automation's zone with its UTC offset, and followed by a
// warning when no process of the workspace is alive to fire anything.

// noSchedulerWarning is printed when nothing holds the workspace's
// scheduler lock.
const noSchedulerWarning = "no mcp-host process for this workspace is running, so nothing fires automations now: " +
	"start one with `mcp-host worker`, or keep one running with `mcp-host service install`"

// schedulerWarning is noSchedulerWarning when no process of h's workspace
// does the scheduler duty, else "" (also for a dry run, which fires
// nothing anyway). The duty is its lock file or its lease in the store: in
// leases mode the scheduler holds no lock file, and on a shared store its
// holder may be a peer on another machine.
func schedulerWarning(ctx context.Context, h *host.Host) string {
	if h.InMemory() {
		return ""
	}
	dir := h.Workspace.LocksDir()
	if describeDuty(ctx, dir, "scheduler", h.Store, describeLock(dir, "scheduler")).Running {
		return ""
	}
	return noSchedulerWarning
}

// warn prints a warning to stderr.
func (e *env) warn(msg string) {
	if msg != "" {
		fmt.Fprintf(e.stdio.Err, "mcp-host: warning: %s\n", msg)
	}
}

// syncTriggers brings the `on:` triggers of h's workflow files into its
// automations, as a scheduler would, so a listing shows them before any
// worker ran. Files that fail to load are left to `mcp-host list` to
// report.
func syncTriggers(ctx context.Context, h *host.Host) error {
	_, err := automations.Sync(ctx, automations.SyncParams{Store: h.Store, Dir: h.Workspace.WorkflowsDir()})
	return err
}

// listingSync is syncTriggers for a command that lists: it waits at most a
// second (another process's write may hold the store) and, failing, warns
// and lets the listing show what is stored.
func (e *env) listingSync(ctx context.Context, h *host.Host) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := syncTriggers(ctx, h); err != nil {
		e.warn(fmt.Sprintf("the workflow files' on: triggers were not synced (%v); showing the stored automations", err))
	}
}

// zoned formats t in a's zone with its offset.
func zoned(a *store.Automation, t time.Time) string {
	return automations.ZonedTime(t, automations.Location(a))
}

// summaryTime formats a summary's time in its zone (its times carry it).
func summaryTime(t time.Time) string {
	return automations.ZonedTime(t, t.Location())
}
