package cli

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/locks"
)

// workerStop is what worker stop did.
type workerStop struct {
	Workspace string `json:"workspace"`
	PID       int    `json:"pid,omitempty"`
	Stopped   bool   `json:"stopped"`
	Message   string `json:"message"`
}

func (e *env) workerStopCommand() *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop this workspace's worker: SIGTERM to the holder of locks/worker, then wait for it to exit",
		Long: `Stop the worker of this workspace (--workspace DIR, else the current one): send
SIGTERM to the process holding locks/worker (after checking, by its start
time, that the pid still names that process; in leases mode, to the holder of
the store's worker lease when it is a process of this machine) and wait up to --wait for it to
let go of the lock. Its runs in flight are released for the next peer. A
worker kept up by "mcp-host service install" is started again by the service
manager: remove the service (mcp-host service uninstall) to keep it down.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := e.workspace()
			if err != nil {
				return err
			}
			rep := workerStop{Workspace: ws.Root}
			err = stopWorker(cmd.Context(), ws.LocksDir(), wait, &rep)
			if err == nil && rep.PID == 0 && leasesConfigured(ws) {
				// Leases mode: the worker holds the store's lease, no lock file.
				err = e.withHost(cmd.Context(), false, func(h *host.Host) error { return stopLeasedWorker(cmd.Context(), h, wait, &rep) })
			}
			if e.json {
				if perr := e.printJSON(rep); perr != nil {
					return perr
				}
			} else if rep.Message != "" {
				e.printf("%s\n", rep.Message)
			}
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the worker to exit")
	return cmd
}

// stopWorker signals the holder of locks/worker in dir and waits for the
// lock to come free.
func stopWorker(ctx context.Context, dir string, wait time.Duration, rep *workerStop) error {
	h, held, err := locks.Describe(dir, "worker")
	if err != nil {
		return err
	}
	if !held {
		rep.Message = "no worker runs for " + rep.Workspace
		return nil
	}
	if !h.Current() {
		return fmt.Errorf("stop worker: locks/worker is held by %s, which cannot be verified as the same process (its start time does not match, or it runs elsewhere); not signalling it", h)
	}
	rep.PID = h.PID
	if err := syscall.Kill(h.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop worker pid %d: %w", h.PID, err)
	}
	// The kernel frees the lock when the worker exits (or lets go).
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	l, err := locks.Acquire(ctx, dir, "worker")
	if err != nil {
		return fmt.Errorf("worker pid %d did not stop within %s (kill -KILL %d stops it at once; its runs are adopted)", h.PID, wait, h.PID)
	}
	if err := l.Unlock(); err != nil {
		return err
	}
	rep.Stopped, rep.Message = true, fmt.Sprintf("stopped worker pid %d for %s", h.PID, rep.Workspace)
	return nil
}
