package cli

import (
	"context"
	"encoding/json"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
)

func (e *env) watchCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "watch <run-id>",
		Short: "Follow a run's output until it ends (exit 0 when it succeeded, 1 otherwise)",
		Long: `Follow a run's output journal from any process until the run ends. Exit
status 0 when the run succeeded, 1 when it failed or was cancelled. With
--json, each journal record is printed as one JSON line.

When the process executing the run died without an ending, watch says so and
goes on following: a live peer (mcp-host worker, or any mcp-host serving the
workspace) adopts the run and resumes it.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return e.withHost(ctx, false, func(re *host.Host) error {
				id := args[0]
				if _, err := re.Runs.Get(ctx, id); err != nil {
					return err
				}
				enc := json.NewEncoder(e.stdio.Out)
				done, err := re.Runs.Watch(ctx, id, runs.WatchParams{
					OnRecord: func(rec runs.Record) error {
						if e.json {
							return enc.Encode(rec)
						}
						e.printRecord(id, rec)
						return nil
					},
					OnOwnerGone: e.ownerGone,
				})
				if err != nil {
					return err
				}
				if done.Status == store.RunSucceeded {
					return nil
				}
				return &exitError{code: ExitFailure}
			})
		},
	}
}

func (e *env) answerCommand() *cobra.Command {
	var question string
	cmd := &cobra.Command{
		Use:   "answer <run-id> <answer>",
		Short: "Answer the question a waiting run asks; the run then resumes",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return e.withHost(ctx, false, func(re *host.Host) error {
				r, err := re.Runs.Answer(ctx, runs.AnswerParams{RunID: args[0], QuestionID: question, Answer: args[1]})
				if err != nil {
					return err
				}
				// The run is runnable again: a worker resumes it unless a peer
				// (the attached `run` that launched it, a serve) does first.
				e.ensureWorker(re, "run "+r.ID)
				if e.json {
					return e.printJSON(r)
				}
				e.printf("answered run %s: %s\n", r.ID, args[1])
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&question, "question", "", "the id of the question answered (refused if another one is open)")
	return cmd
}

func (e *env) cancelCommand() *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "cancel <run-id>",
		Short: "Cancel a run (a running step's processes get SIGTERM, then SIGKILL)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return e.withHost(ctx, false, func(re *host.Host) error {
				r, err := re.Runs.Cancel(ctx, args[0])
				if err != nil {
					return err
				}
				if !r.Status.Settled() && wait > 0 {
					wctx, cancel := context.WithTimeout(ctx, wait)
					done, err := re.Runs.WaitSettledOrParked(wctx, r.ID)
					cancel()
					if err == nil {
						r = done
					} else if r, err = re.Runs.Get(ctx, r.ID); err != nil {
						return err
					}
				}
				if e.json {
					return e.printJSON(r)
				}
				if r.Status.Settled() {
					e.printf("run %s %s\n", r.ID, r.Status)
				} else {
					e.printf("cancel requested: run %s is still %s; its owner (pid %d) stops it\n", r.ID, r.Status, r.OwnerPID)
				}
				return nil
			})
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 15*time.Second, "wait this long for a running run to stop (0: do not wait)")
	return cmd
}

// targetInfo is one workflow as `list --json` shows it.
