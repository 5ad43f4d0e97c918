package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/internal/page"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/store"
)

// automationCommands: automations, roll.
func (e *env) automationCommands() []*cobra.Command {
	return []*cobra.Command{e.automationsCommand(), e.rollCommand()}
}

// triggerFlags are the flags that say when an automation fires.
type triggerFlags struct {
	cron, tz, every, url string
	files                []string
	input                string
	overlap, missed      string
}

func (f *triggerFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.cron, "cron", "", `cron spec, five fields or a descriptor ("0 3 * * 1-5", "@daily"); may start with CRON_TZ=Zone`)
	fl.StringVar(&f.tz, "tz", "", "IANA time zone of --cron (default: the machine's)")
	fl.StringVar(&f.every, "every", "", "interval, measured from the previous completion (30m, 1h); with --files or --url, the poll period")
	fl.StringArrayVar(&f.files, "files", nil, "workspace-relative glob to watch (src/**/*.go); repeat for more")
	fl.StringVar(&f.url, "url", "", "http(s) URL to poll; a change of its body launches a run")
	fl.StringVar(&f.input, "input", "", "input of the runs: a JSON object, @FILE, or - for stdin")
	fl.StringVar(&f.overlap, "overlap", "", "while a run is going: skip (default), allow or buffer_one")
	fl.StringVar(&f.missed, "missed", "", "cron slots missed while no scheduler ran: skip (default) or once")
}

func (e *env) automationsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "automations",
		Aliases: []string{"automation"},
		Short:   "Create, list, change and fire automations (cron, interval and monitor triggers)",
		Long: `Automations launch runs of a target on a cron schedule, at an interval measured
from the previous completion, or when files or an HTTP resource change.
Automations from the on: lists of workflow files are owned by "config" and
follow the files; the ones created here are owned by "human". Agents own the
ones they create ("agent:<client>"); under the agents.automations: approve
policy those wait for "automations approve KEY" before they fire.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(e.autoCreateCommand(), e.autoListCommand(), e.autoShowCommand(), e.autoUpdateCommand(),
		e.autoPauseCommand(), e.autoResumeCommand(), e.autoDeleteCommand(), e.autoTriggerCommand())
	cmd.AddCommand(e.autoApprovalCommands()...)
	return cmd
}

func (e *env) autoCreateCommand() *cobra.Command {
	var f triggerFlags
	var key, target, owner string
	cmd := &cobra.Command{
		Use:   "create --key K --target T (--cron EXPR [--tz ZONE] | --every DUR | --files GLOB [--every DUR] | --url URL [--every DUR])",
		Short: "Create an automation (creating it again with the same spec is a no-op)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if key == "" || target == "" {
				return usagef("--key and --target are required")
			}
			if f.cron == "" && f.every == "" && len(f.files) == 0 && f.url == "" {
				return usagef("say when it fires: --cron, --every, --files or --url")
			}
			in, err := e.readInput(f.input)
			if err != nil {
				return err
			}
			return e.withHost(cmd.Context(), true, func(a *host.Host) error {
				res, err := a.Automations.Create(cmd.Context(), automations.CreateParams{Owner: owner, Spec: automations.Spec{
					Key: key, Target: target, Input: in,
					Cron: f.cron, TZ: f.tz, Every: f.every, Files: f.files, URL: f.url,
					Overlap: f.overlap, Missed: f.missed,
				}})
				if err != nil {
					return err
				}
				x := res.Automation
				next, warning := automations.NextDue(x, time.Now()), schedulerWarning(cmd.Context(), a)
				if e.json {
					return e.printJSON(struct {
						automations.CreateResult
						NextDue time.Time `json:"next_due,omitzero"`
						Zone    string    `json:"zone"`
						Warning string    `json:"warning,omitempty"`
					}{res, next.In(automations.Location(x)), automations.Location(x).String(), warning})
				}
				verb := "created"
				if !res.Created {
					verb = "exists (same spec)"
				}
				e.printf("%s %s (%s): %s → %s\n", verb, x.Key, x.ID, automations.Describe(x.Trigger), x.Target)
				e.printf("  next due    %s\n", zoned(x, next))
				e.warn(warning)
				return nil
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&key, "key", "", "the automation's key, unique per owner")
	cmd.Flags().StringVar(&target, "target", "", "the workflow to run")
	cmd.Flags().StringVar(&owner, "owner", "human", "owner of the automation")
	return cmd
}

func (e *env) autoListCommand() *cobra.Command {
	var (
		owner, cursor string
		limit         int
		pf            pageFlags
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List automations with their last and next times",
		Long: `List automations with their last and next times, by owner then key. The
on: triggers of workflow files are synced first. A page holds at most
--limit automations (with --json, those that fit in --max-bytes); the next
page's cursor is printed after it ("more: ...", on stderr with --json).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > maxAutomationsPage {
				return usagef("--limit %d: use 1 to %d", limit, maxAutomationsPage)
			}
			after, err := automations.ParseCursor(cursor)
			if err != nil {
				return usagef("--cursor %q: %v", cursor, err)
			}
			room, err := pf.room()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return e.withHost(ctx, false, func(a *host.Host) error {
				e.listingSync(ctx, a)
				now := time.Now()
				fetch := func(n int) ([]automations.Summary, string, error) {
					list, err := a.Automations.List(ctx, automations.ListParams{Owner: owner, After: after, Limit: n + 1})
					if err != nil {
						return nil, "", err
					}
					next := ""
					if len(list) > n {
						list, next = list[:n], automations.Cursor(list[n-1])
					}
					sums := make([]automations.Summary, 0, len(list))
					for _, x := range list {
						sum := automations.Summarize(x, now)
						sum.LastStatus = automations.LastStatus(ctx, a.Store, x)
						sums = append(sums, sum)
					}
					return sums, next, nil
				}
				var (
					sums []automations.Summary
					next string
				)
				if e.json {
					sums, next, err = page.FillSized(limit, room, page.Indented(1), fetch, func(s automations.Summary) string { return "automation " + s.ID })
					err = flagError(err)
				} else {
					sums, next, err = fetch(limit)
				}
				if err != nil {
					return err
				}
				more := func(w io.Writer) {
					if next != "" {
						fmt.Fprintf(w, "more: mcp-host automations list --cursor '%s'\n", next)
					}
				}
				if e.json {
					if sums == nil {
						sums = []automations.Summary{}
					}
					more(e.stdio.Err)
					return e.printJSON(sums)
				}
				if len(sums) == 0 {
					e.printf("no automations\n")
					return nil
				}
				e.printSummaries(sums)
				more(e.stdio.Out)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&owner, "owner", "", "only this owner's (human, config, agent:<client>, ...)")
	cmd.Flags().IntVar(&limit, "limit", maxAutomationsPage, fmt.Sprintf("at most this many automations (1 to %d)", maxAutomationsPage))
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue a listing from the cursor a previous page printed")
	pf.register(cmd)
	return cmd
}

// maxAutomationsPage is the most automations one page lists.
const maxAutomationsPage = 500

// printSummaries writes automations as a table.
func (e *env) printSummaries(sums []automations.Summary) {
	w := tabwriter.NewWriter(e.stdio.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "KEY\tOWNER\tTARGET\tSCHEDULE\tSTATE\tLAST\tNEXT")
	for _, s := range sums {
		state := "enabled"
		switch {
		case s.Approval == store.ApprovalPending:
			state = "pending approval"
		case !s.Enabled && s.Note != "":
			state = "paused " + text.OneLine(s.Note, 60) // why, at a glance
		case !s.Enabled:
			state = "paused"
		}
		last := "-"
		if !s.LastStart.IsZero() {
			last = summaryTime(s.LastStart) + " " + s.LastStatus
		}
		next := "-"
		if s.Enabled && !s.NextDue.IsZero() {
			next = summaryTime(s.NextDue)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Key, s.Owner, s.Target, s.Schedule, state, last, next)
	}
	w.Flush()
}

func (e *env) autoShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show <id|key>",
		Short: "Show an automation, its history and its last fires",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.withHost(cmd.Context(), false, func(a *host.Host) error {
				d, err := a.Automations.Get(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if e.json {
					return e.printJSON(struct {
						*automations.Detail
						NextDue time.Time `json:"next_due,omitzero"`
						Zone    string    `json:"zone"`
					}{d, automations.NextDue(d.Automation, time.Now()).In(automations.Location(d.Automation)), automations.Location(d.Automation).String()})
				}
				// The last run's status as the history reads it (the record
				// says queued until the scheduler looks again).
				status := d.Automation.State.LastStatus
				for _, f := range d.Fires {
					if f.RunID != "" && f.RunID == d.Automation.State.LastRunID && f.RunStatus != "" {
						status = string(f.RunStatus)
					}
				}
				e.printAutomation(d.Automation, status)
				if len(d.Fires) > 0 {
					e.printf("fires (newest first):\n")
					w := tabwriter.NewWriter(e.stdio.Out, 0, 0, 2, ' ', 0)
					fmt.Fprintln(w, "  NOMINAL\tACTUAL\tLAG\tOUTCOME\tRUN\tRUN STATUS")
					for _, f := range d.Fires {
						kind := ""
						if f.Manual {
							kind = " (manual)"
						}
						status := string(f.RunStatus)
						if status == "" && f.RunID != "" {
							status = "deleted"
						}
						fmt.Fprintf(w, "  %s\t%s\t%s\t%s%s\t%s\t%s\n", zoned(d.Automation, f.Nominal), zoned(d.Automation, f.Actual), f.Lag.Round(time.Millisecond), f.Outcome, kind, f.RunID, status)
					}
					w.Flush()
				}
				e.warn(schedulerWarning(cmd.Context(), a))
				return nil
			})
		},
	}
}

// printAutomation prints x; lastStatus is its last run's status.
func (e *env) printAutomation(x *store.Automation, lastStatus string) {
	st := x.State
	e.printf("%s (%s)\n", x.Key, x.ID)
	e.printf("  owner       %s\n", x.Owner)
	if x.Source != "" {
		e.printf("  source      %s\n", x.Source)
	}
	e.printf("  target      %s %s\n", x.Target, x.Input)
	e.printf("  schedule    %s\n", automations.Describe(x.Trigger))
	e.printf("  overlap     %s · missed %s\n", x.Overlap, x.Missed)
	if x.Approval == store.ApprovalPending {
		e.printf("  state       pending approval: mcp-host automations approve %s (or reject)\n", x.Key)
	} else if x.Enabled {
		e.printf("  state       enabled\n")
	} else {
		e.printf("  state       paused %s\n", x.Note)
	}
	e.printf("  revision    %d\n", x.Revision)
	e.printf("  last start  %s %s %s\n", zoned(x, st.LastStart), st.LastRunID, lastStatus)
	e.printf("  last finish %s\n", zoned(x, st.LastFinish))
	e.printf("  next due    %s\n", zoned(x, automations.NextDue(x, time.Now())))
	e.printf("  fires %d · skipped %d · missed %d\n", st.Fires, st.Skipped, st.Missed)
	if st.Pending != nil {
		e.printf("  pending     launch since %s (%d attempts) %s\n", zoned(x, st.Pending.Since), st.Pending.Attempts, st.Pending.Error)
	}
	if st.LastError != "" {
		e.printf("  last error  %s\n", st.LastError)
	}
	if st.Failures > 0 {
		e.printf("  failures    %d in a row\n", st.Failures)
	}
}

func (e *env) autoUpdateCommand() *cobra.Command {
	var f triggerFlags
	var target string
	var revision int64
	cmd := &cobra.Command{
		Use:   "update <id|key> [--target T] [--input JSON] [--cron EXPR [--tz ZONE] | --every DUR | --files GLOB | --url URL] [--overlap P] [--missed P]",
		Short: "Change an automation (a new trigger replaces the old one)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := e.readInput(f.input)
			if err != nil {
				return err
			}
			p := automations.UpdateParams{Ref: args[0], Revision: revision, Input: in}
			fl := cmd.Flags()
			str := func(name string, v string) *string {
				if fl.Changed(name) {
					return &v
				}
				return nil
			}
			p.Target, p.Cron, p.TZ, p.Every, p.URL = str("target", target), str("cron", f.cron), str("tz", f.tz), str("every", f.every), str("url", f.url)
			p.Overlap, p.Missed = str("overlap", f.overlap), str("missed", f.missed)
			if fl.Changed("files") {
				p.Files = f.files
			}
			return e.autoEdit(cmd.Context(), true, func(svc *automations.Service) (*store.Automation, error) { return svc.Update(cmd.Context(), p) })
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&target, "target", "", "the workflow to run")
	cmd.Flags().Int64Var(&revision, "revision", 0, "refuse the change unless the automation is at this revision")
	return cmd
}

// autoEdit opens the store, runs fn and prints the automation it returns,
// with its next due time; warn adds the warning when no process is alive
// to fire it.
func (e *env) autoEdit(ctx context.Context, warn bool, fn func(*automations.Service) (*store.Automation, error)) error {
	return e.withHost(ctx, true, func(a *host.Host) error {
		x, err := fn(a.Automations)
		if err != nil {
			return err
		}
		warning := ""
		if warn && x.Enabled {
			warning = schedulerWarning(ctx, a)
		}
		if e.json {
			return e.printJSON(struct {
				*store.Automation
				NextDue time.Time `json:"next_due,omitzero"`
				Zone    string    `json:"zone"`
				Warning string    `json:"warning,omitempty"`
			}{x, automations.NextDue(x, time.Now()).In(automations.Location(x)), automations.Location(x).String(), warning})
		}
		e.printAutomation(x, x.State.LastStatus)
		e.warn(warning)
		return nil
	})
}

func (e *env) autoPauseCommand() *cobra.Command {
	var note string
	cmd := &cobra.Command{
		Use:   "pause <id|key> [--note TEXT]",
		Short: "Pause an automation; it fires nothing until resumed",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.autoEdit(cmd.Context(), false, func(svc *automations.Service) (*store.Automation, error) {
				return svc.Pause(cmd.Context(), args[0], note)
			})
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "why it is paused")
	return cmd
}

func (e *env) autoResumeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "resume <id|key>",
		Short: "Resume a paused automation (what it missed meanwhile is not caught up)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.autoEdit(cmd.Context(), true, func(svc *automations.Service) (*store.Automation, error) {
				return svc.Resume(cmd.Context(), args[0])
			})
		},
	}
}

func (e *env) autoDeleteCommand() *cobra.Command {
	var revision int64
	cmd := &cobra.Command{
		Use:   "delete <id|key>",
		Short: "Delete an automation and its history",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.withHost(cmd.Context(), true, func(a *host.Host) error {
				x, err := a.Automations.Delete(cmd.Context(), automations.DeleteParams{Ref: args[0], Revision: revision})
				if err != nil {
					return err
				}
				if e.json {
					return e.printJSON(map[string]any{"deleted": x.ID, "key": x.Key})
				}
				e.printf("deleted %s (%s)\n", x.Key, x.ID)
				return nil
			})
		},
	}
	cmd.Flags().Int64Var(&revision, "revision", 0, "refuse unless the automation is at this revision")
	return cmd
}

func (e *env) autoTriggerCommand() *cobra.Command {
	var input string
	cmd := &cobra.Command{
		Use:   "trigger <id|key> [--input JSON]",
		Short: "Fire an automation now (its overlap policy applies)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := e.readInput(input)
			if err != nil {
				return err
			}
			return e.withHost(cmd.Context(), true, func(a *host.Host) error {
				rep, err := a.Automations.Trigger(cmd.Context(), automations.TriggerParams{Ref: args[0], Input: in})
				if err != nil {
					return err
				}
				e.firedWork(a, rep)
				if e.json {
					return e.printJSON(rep)
				}
				e.printFire(rep)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&input, "input", "", "input for this fire: a JSON object, @FILE, or - for stdin (default: the automation's)")
	return cmd
}

func (e *env) printFire(r *automations.FireReport) {
	switch r.Outcome {
	case store.FireQueued:
		e.printf("fired %s: run %s queued\n", r.Key, r.RunID)
	case store.FireSkipped:
		e.printf("fired %s: skipped, its previous run is still going (overlap skip)\n", r.Key)
	case store.FireBuffered:
		e.printf("fired %s: held until its previous run settles (overlap buffer_one)\n", r.Key)
	default:
		e.printf("fired %s: %s\n", r.Key, r.Outcome)
	}
}

// rollSkip is roll's JSON when nothing fired.
type rollSkip struct {
	Skipped string `json:"skipped"`
	PID     int    `json:"pid,omitempty"`
}
