package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/workspace"
)

func (e *env) workerCommand() *cobra.Command {
	var idle time.Duration
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a headless peer: execute and adopt this workspace's runs and fire its automations until signalled or idle",
		Long: `Run a headless peer for the workspace: it holds the worker duty
(locks/worker and a lease it renews every second), executes queued runs,
resumes runs whose process died and runs whose question was
answered, and wakes runs whose durable sleep ended; it also fires the
workspace's automations whenever it holds locks/scheduler. At most one worker
runs per workspace; a second one exits once it sees the first renew its
lease (within a second) or, when the first has stopped making progress
(SIGSTOP, Ctrl-Z), takes the duty over once its lease expires (5 s); the
stopped worker, when it runs again, finds its lease lost and exits.

It stops on SIGINT or SIGTERM: a step still in flight a second later goes on
under its step supervisor and its run is left for the next peer, which
re-attaches to the step and takes its result. It also stops after --idle with no work and no enabled
automation (0: never). mcp-host run --detach and mcp-host answer start one in
the background when none runs; run it yourself from a terminal, a systemd
user unit or launchd to keep one up.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if e.dryRun {
				return usagef("worker cannot run with --dry-run: it serves the workspace's stored runs")
			}
			if idle < 0 {
				return usagef("--idle %s: must not be negative", idle)
			}
			ctx := cmd.Context()
			closeLog, err := e.useWorkerLog()
			if err != nil {
				return err
			}
			defer closeLog()
			re, err := e.open(ctx, true, func(c *host.Config) { c.StopGrace = workerStopGrace })
			if err != nil {
				return err
			}
			defer re.Close()
			parts := []peerPart{
				{Name: "runs", Start: re.Runs.Start, Stop: re.Runs.Stop, Busy: re.Runs.Busy},
				// While an automation is enabled this worker may be the
				// only scheduler, so it stays up.
				{Name: "scheduler", Start: re.Scheduler.Start, Stop: re.Scheduler.Stop, Busy: func(ctx context.Context) (bool, error) {
					n, err := automations.CountEnabled(ctx, re.Store)
					return n > 0, err
				}},
			}
			// The workflow files' on: triggers first, so that an idle check
			// before the scheduler's first pass counts them.
			if err := syncTriggers(ctx, re); err != nil {
				return err
			}
			ctx, stopServing := re.UntilFailed(ctx) // a vanished database ends the worker with its error
			defer stopServing()
			// A live peer from now on (status lists it from any machine),
			// registered before the duty is taken: its writes come first.
			re.RegisterPeer(ctx) //nolint:errcheck // returns nil
			defer re.EndPeer()
			err = e.runWorker(ctx, re.Workspace, re.Worker, followHealth(re.Store), idle, parts)
			if failed := re.Failed(); failed != nil {
				return failed
			}
			return err
		},
	}
	cmd.Flags().DurationVar(&idle, "idle", 60*time.Second, "exit after this long without work (0: never)")
	cmd.AddCommand(e.workerStopCommand())
	return cmd
}

// workerStopGrace is how long a stopping worker lets a step in flight
// finish before it releases its run for the next peer (the step goes on
// under its supervisor): a worker told to stop (a signal, a service
// manager) exits within a few seconds rather than the engine's default
// StopGrace.
const workerStopGrace = time.Second

// peerPart is one service a peer runs: the run engine's adoption loop
// or the automations scheduler. Busy reports whether the part has
// work that should keep an idle worker up.
type peerPart struct {
	Name  string
	Start func(ctx context.Context) error // returns at once
	Stop  func()                          // waits; idempotent
	Busy  func(ctx context.Context) (bool, error)
}

// workerRuns reports whether a worker does the workspace's worker duty and
// makes progress. A worker that holds it but is stopped (SIGSTOP, Ctrl-Z)
// or let its lease expire does not count: a new one is started, and takes
// the duty over once the lease expires.
func workerRuns(h *host.Host) bool {
	d, err := locks.DescribeDuty(context.Background(), h.Workspace.LocksDir(), "worker", h.Store, time.Now())
	return err == nil && d.Done()
}

// runWorker holds the worker duty and runs parts until ctx ends, the duty
// is taken over (this process was stopped longer than the lease), or, with
// idle > 0, none of them has been busy for idle. A second worker for the
// same workspace returns nil once it sees the first one make progress.
func (e *env) runWorker(ctx context.Context, ws *workspace.Workspace, duty *locks.Duty, health *healthFollow, idle time.Duration, parts []peerPart) error {
	held, err := duty.TakeOrWatch(ctx)
	if errors.Is(err, locks.ErrHeld) {
		fmt.Fprintf(e.stdio.Err, "mcp-host: a worker already runs for %s (%v)\n", ws.Root, err)
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { held.Release() }()
	for _, p := range parts {
		defer p.Stop()
		if err := p.Start(ctx); err != nil {
			return fmt.Errorf("start %s: %w", p.Name, err)
		}
	}
	e.log.Info("worker started", "pid", os.Getpid(), "workspace", ws.Root, "idle", idle)
	busy := func() bool {
		for _, p := range parts {
			if p.Busy == nil {
				continue
			}
			b, err := p.Busy(ctx)
			if err != nil {
				e.log.Warn("check for work", "part", p.Name, "err", err)
				return true
			}
			if b {
				return true
			}
		}
		return false
	}
	period := time.Second
	if idle > 0 {
		period = min(period, max(idle/2, 10*time.Millisecond))
	}
	t := time.NewTicker(period)
	defer t.Stop()
	lastBusy := time.Now()
	lost := func() <-chan struct{} {
		if held == nil {
			return nil // released while the store cannot write
		}
		return held.Lost()
	}
	for {
		select {
		case <-ctx.Done():
			e.log.Info("worker stopping", "pid", os.Getpid())
			return nil
		case <-lost():
			e.log.Warn("worker duty taken over by another worker while this one made no progress; exiting", "pid", os.Getpid(), "err", held.Err())
			return nil
		case <-health.ch:
			var done bool
			if held, done = e.followDuty(ctx, health.changed(), duty, held); done {
				return nil
			}
			lastBusy = time.Now()
			continue
		case <-t.C:
			if held == nil { // released while the store could not write
				var done bool
				if held, done = e.followDuty(ctx, health.paused(), duty, held); done {
					return nil
				}
				lastBusy = time.Now()
				continue
			}
		}
		if idle <= 0 || held == nil {
			continue
		}
		if busy() {
			lastBusy = time.Now()
			continue
		}
		if time.Since(lastBusy) < idle {
			continue
		}
		// Idle: let go of the duty first, then look once more, so work
		// queued by someone who saw it still held is not left without a
		// worker.
		if err := held.Release(); err != nil {
			return err
		}
		if !busy() {
			e.log.Info("worker idle; exiting", "pid", os.Getpid(), "idle", idle)
			return nil
		}
		if held, err = duty.TryTake(ctx); err != nil {
			return nil // another worker took over
		}
		lastBusy = time.Now()
	}
}
