package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cairnhq/cairn/internal/page"
	"github.com/cairnhq/cairn/internal/text"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
)

func (e *env) runsCommand() *cobra.Command {
	var (
		status, target, cursor string
		limit                  int
		pf                     pageFlags
	)
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List runs, newest first (runs show <id> for one)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p := runs.ListParams{Target: target, Limit: limit, Cursor: cursor}
			if limit < 0 || limit > store.MaxListLimit {
				return usagef("--limit %d: use 1 to %d", limit, store.MaxListLimit)
			}
			for _, s := range strings.Split(status, ",") {
				if s = strings.TrimSpace(s); s == "" {
					continue
				}
				if !store.RunStatus(s).Valid() {
					return usagef("--status %q: use queued, running, waiting, succeeded, failed or cancelled (comma-separated)", s)
				}
				p.Status = append(p.Status, store.RunStatus(s))
			}
			room, err := pf.room()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return e.withHost(ctx, false, func(re *host.Host) error {
				if e.json {
					// A page of the runs that fit in --max-bytes, printed; a
					// run too large for a page alone comes cut, as runs show
					// --json cuts it, and the next page goes on after it.
					list, next, err := page.FillOrCut(limit, room, page.Indented(2), func(n int) ([]*runs.Run, string, error) {
						q := p
						q.Limit = n
						return re.Runs.List(ctx, q)
					}, func(r *runs.Run) string { return "run " + r.ID + " (print it with runs show --json)" },
						func(r *runs.Run, _ int) *runs.Run { return fitRunIn(r, room, page.Indented(2)) })
					if err != nil {
						return flagError(err)
					}
					if list == nil {
						list = []*runs.Run{}
					}
					return e.printJSON(struct {
						Runs       []*runs.Run `json:"runs"`
						NextCursor string      `json:"next_cursor,omitempty"`
					}{list, next})
				}
				list, next, err := re.Runs.List(ctx, p)
				if err != nil {
					return err
				}
				if len(list) == 0 {
					e.printf("no runs\n")
					return nil
				}
				tw := tabwriter.NewWriter(e.stdio.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tTARGET\tSTATUS\tCREATED\t")
				for _, r := range list {
					note := r.Error
					if r.Question != nil {
						note = "asks: " + r.Question.Text
					}
					if r.Stalled != "" {
						note = r.Stalled
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Target, r.Status, r.CreatedAt.Local().Format(time.DateTime), text.OneLine(note, 60))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if next != "" {
					e.printf("more: mcp-host runs --cursor %s\n", next)
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&status, "status", "", "only runs with this status (comma-separated: queued, running, waiting, succeeded, failed, cancelled)")
	f.StringVar(&target, "target", "", "only runs of this target")
	f.IntVar(&limit, "limit", 50, "at most this many runs")
	f.StringVar(&cursor, "cursor", "", "continue a previous listing")
	pf.register(cmd)
	cmd.AddCommand(e.runsShowCommand(), e.runsDeleteCommand())
	return cmd
}

func (e *env) runsShowCommand() *cobra.Command {
	var pf pageFlags
	cmd := &cobra.Command{
		Use:   "show <run-id>",
		Short: "Show one run: status, input, result, question, steps",
		Long: `Show one run: status, input, result, question, steps. With --json, a run
larger than --max-bytes has its largest fields cut, listed in "cut" with
where the whole value is.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := pf.room(); err != nil {
				return err
			}
			ctx := cmd.Context()
			return e.withHost(ctx, false, func(re *host.Host) error {
				r, err := re.Runs.Get(ctx, args[0])
				if err != nil {
					return err
				}
				if e.json {
					return e.printJSON(fitRun(r, pf.maxBytes))
				}
				e.printRun(r)
				return nil
			})
		},
	}
	pf.register(cmd)
	return cmd
}

func (e *env) printRun(r *runs.Run) {
	tw := tabwriter.NewWriter(e.stdio.Out, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	ts := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Local().Format(time.DateTime)
	}
	row("run", r.ID)
	row("target", r.Target)
	status := string(r.Status)
	if r.CancelRequested && !r.Status.Settled() {
		status += " (cancel requested)"
	}
	row("status", status)
	trig := r.Trigger.Kind
	if r.Trigger.Client != "" {
		trig += " (" + r.Trigger.Client + ")"
	}
	if r.Trigger.AutomationID != "" {
		trig += " " + r.Trigger.AutomationID
	}
	principal := r.Trigger.Principal
	if principal == "" && r.Trigger.Kind == "manual" {
		principal = "human" // launched from the command line
	}
	if principal != "" {
		trig += " by " + principal
	}
	row("trigger", trig)
	row("created", ts(r.CreatedAt))
	row("started", ts(r.StartedAt))
	row("finished", ts(r.FinishedAt))
	if r.OwnerPID != 0 {
		row("owner", fmt.Sprintf("pid %d", r.OwnerPID))
	}
	row("stalled", r.Stalled)
	if !r.WakeAt.IsZero() {
		row("wakes", ts(r.WakeAt))
	}
	row("input", string(r.Input))
	row("result", string(r.Result))
	row("error", r.Error)
	if q := r.Question; q != nil {
		text := q.Text
		if len(q.Choices) > 0 {
			text += " [" + strings.Join(q.Choices, "/") + "]"
		}
		row("question", text)
		row("answer", fmt.Sprintf("mcp-host answer %s <answer>", r.ID))
	}
	tw.Flush()
	if len(r.Steps) == 0 {
		return
	}
	e.printf("steps\n")
	tw = tabwriter.NewWriter(e.stdio.Out, 0, 4, 2, ' ', 0)
	for _, s := range r.Steps {
		var notes []string
		if s.Attempts > 1 {
			notes = append(notes, fmt.Sprintf("%d attempts", s.Attempts))
		}
		if s.ExitCode != nil {
			notes = append(notes, fmt.Sprintf("exit %d", *s.ExitCode))
		}
		if s.StatusCode != 0 {
			notes = append(notes, fmt.Sprintf("HTTP %d", s.StatusCode))
		}
		if s.Answer != nil {
			notes = append(notes, fmt.Sprintf("answer %q", *s.Answer))
		}
		if !s.Until.IsZero() && s.Status != runs.StepSucceeded {
			notes = append(notes, "until "+ts(s.Until))
		}
		if !s.StartedAt.IsZero() && !s.FinishedAt.IsZero() {
			notes = append(notes, s.FinishedAt.Sub(s.StartedAt).Round(time.Millisecond).String())
		}
		if s.Error != "" {
			notes = append(notes, s.Error)
		}
		if s.OutputFile != "" {
			notes = append(notes, "output in "+s.OutputFile)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.ID, s.Kind, s.Status, strings.Join(notes, ", "))
	}
	tw.Flush()
	e.printTails(r.Steps)
}

// printTails prints the end of each step's output (runs.OutputTailLines
// lines, runs.OutputTailBytes at most), indented under the step's id.
func (e *env) printTails(steps []runs.Step) {
	for _, s := range steps {
		if s.OutputTail == "" {
			continue
		}
		e.printf("output of %s (last lines)\n", s.ID)
		for _, line := range strings.Split(s.OutputTail, "\n") {
			e.printf("  | %s\n", line)
		}
	}
}
