package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

func (e *env) rollCommand() *cobra.Command {
	var input string
	cmd := &cobra.Command{
		Use:   "roll <key-or-target> [--input JSON]",
		Short: "Fire an automation now, or run a target once (for cron, launchd or systemd timers)",
		Long: `roll fires the automation with this key now, under locks/schedule:<key>,
records it in the automation's history and prints the result as JSON. When
another process holds that lock it prints "skipped: held by pid N" and exits 0.
A name that is not an automation key but a workflow runs that workflow once,
attached, and exits 0 when it succeeded.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			in, err := e.readInput(input)
			if err != nil {
				return err
			}
			return e.withHost(ctx, true, func(a *host.Host) error {
				rep, err := a.Automations.Roll(ctx, automations.TriggerParams{Ref: args[0], Input: in})
				var held *locks.HeldError
				switch {
				case errors.As(err, &held):
					msg := "held by another process"
					if held.Holder.PID != 0 {
						msg = fmt.Sprintf("held by pid %d", held.Holder.PID)
					}
					if e.json {
						return e.printJSON(rollSkip{Skipped: msg, PID: held.Holder.PID})
					}
					e.printf("skipped: %s\n", msg)
					return nil
				case errors.Is(err, store.ErrPaused):
					if e.json {
						return e.printJSON(rollSkip{Skipped: err.Error()})
					}
					e.printf("skipped: %v\n", err)
					return nil
				case errors.Is(err, store.ErrNotFound):
					return e.rollTarget(ctx, a, args[0], in)
				case err != nil:
					return err
				}
				e.firedWork(a, rep)
				return e.printJSON(rep)
			})
		},
	}
	cmd.Flags().StringVar(&input, "input", "", "input for this fire or run: a JSON object, @FILE, or - for stdin")
	return cmd
}

// rollTarget runs the workflow name once in this process, attached: its
// output goes to stdout (or the settled run, with --json), and the command
// fails when the run does not succeed.
func (e *env) rollTarget(ctx context.Context, a *host.Host, name string, input json.RawMessage) error {
	if _, err := workflows.Load(a.Workspace.WorkflowsDir(), name); err != nil {
		var nf *workflows.NotFoundError
		if errors.As(err, &nf) {
			return fmt.Errorf("no workflow or automation named %q", name)
		}
		return err
	}
	r, err := a.Runs.Launch(ctx, runs.LaunchParams{Target: name, Input: input, Trigger: store.Trigger{Kind: "manual"}})
	if err != nil {
		return err
	}
	final, err := a.Runs.Watch(ctx, r.ID, runs.WatchParams{
		Resume: true,
		OnRecord: func(rec runs.Record) error {
			switch {
			case e.json:
				e.askedOnStderr(r.ID, rec)
			case rec.Type == runs.RecordText:
				e.printf("%s\n", strings.TrimSuffix(rec.Text, "\n"))
			case rec.Type == runs.RecordQuestion:
				e.printRecord(r.ID, rec)
			}
			return nil
		},
		OnOwnerGone: func(pid int) { e.ownerGone(pid) },
	})
	if err != nil {
		return err
	}
	if e.json {
		if err := e.printJSON(final); err != nil {
			return err
		}
	} else {
		e.printf("run %s %s\n", final.ID, final.Status)
	}
	if final.Status != store.RunSucceeded {
		msg := fmt.Errorf("run %s %s", final.ID, final.Status)
		if final.Error != "" {
			msg = fmt.Errorf("run %s %s: %s", final.ID, final.Status, final.Error)
		}
		return &exitError{code: ExitFailure, err: msg}
	}
	return nil
}
