package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/retention"
)

func (e *env) gcCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Delete runs past retention with their journals, and give the database's space back",
		Long: `Delete the settled runs that the retention: settings of .cairn/config.yaml
select (default: runs that finished more than 30 days ago, except the newest
100 of each target and of each automation), with their steps, fire history
and journal files, then return the freed space of the database to the disk.
Queued, running and waiting runs are never deleted. A started host (serve,
worker) does this by itself every retention.interval.

With --dry-run, list what would be deleted and change nothing.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var rep retention.Report
			var err error
			if e.dryRun {
				rep, err = e.gcDryRun(ctx)
			} else {
				err = e.withHost(ctx, false, func(h *host.Host) error {
					rep, err = h.Retention.Collect(ctx, false)
					return err
				})
			}
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(rep)
			}
			e.printReport(rep)
			return nil
		},
	}
}

// gcDryRun collects with dryRun over the workspace's database opened read
// only: the global --dry-run means that nothing is written, and a memory
// store would have nothing to report.
func (e *env) gcDryRun(ctx context.Context) (retention.Report, error) {
	h, err := e.open(ctx, false, func(c *host.Config) { c.DryRun, c.ReadOnly = false, true })
	if err != nil {
		return retention.Report{}, err
	}
	defer h.Close()
	rep, err := h.Retention.Collect(ctx, true)
	if rep.Deleted == nil {
		rep.Deleted = []string{}
	}
	return rep, err
}

func (e *env) printReport(rep retention.Report) {
	verb := "deleted"
	if rep.DryRun {
		verb = "would delete"
	}
	e.printf("%s %d of %d runs", verb, len(rep.Deleted), rep.Examined)
	if !rep.DryRun {
		e.printf(" and %d journal files (%d bytes)", rep.Journals, rep.JournalBytes)
	}
	e.printf("\n")
	if rep.Orphans > 0 {
		e.printf("%s %d journal files left without a run\n", map[bool]string{false: "removed", true: "would remove"}[rep.DryRun], rep.Orphans)
	}
	if rep.Operations > 0 {
		e.printf("forgot %d write operation ids older than %v\n", rep.Operations, retention.OperationsKept)
	}
	if sp := rep.Space; sp != nil && sp.Method != "" {
		e.printf("database: %d -> %d pages of %d bytes (%s)\n", sp.PagesBefore, sp.PagesAfter, sp.PageSize, sp.Method)
	}
	if rep.DryRun && len(rep.Deleted) > 0 {
		const show = 20
		e.printf("  %s", strings.Join(rep.Deleted[:min(show, len(rep.Deleted))], "\n  "))
		if len(rep.Deleted) > show {
			e.printf("\n  ... and %d more (--json lists all)", len(rep.Deleted)-show)
		}
		e.printf("\n")
	}
}

func (e *env) runsDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete <run-id>...",
		Short: "Delete settled runs with their steps, fire history and journal files",
		Long: `Delete the named runs now, whatever the retention settings say, with their
steps, fire history rows and journal files. A queued, running or waiting run
is not deleted: cancel it first. Exits 1 when a run was kept or not found.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("%s takes one or more run ids", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if e.dryRun {
				return usagef("runs delete has nothing to delete under --dry-run (mcp-host gc --dry-run lists what retention would delete)")
			}
			ctx := cmd.Context()
			return e.withHost(ctx, false, func(h *host.Host) error {
				got, rep, err := h.Retention.Delete(ctx, args)
				if err != nil {
					return err
				}
				if e.json {
					if err := e.printJSON(struct {
						Deleted      []string `json:"deleted"`
						Active       []string `json:"active,omitempty"`
						Missing      []string `json:"missing,omitempty"`
						Journals     int      `json:"journals"`
						JournalBytes int64    `json:"journal_bytes"`
					}{rep.Deleted, got.Active, got.Missing, rep.Journals, rep.JournalBytes}); err != nil {
						return err
					}
				} else {
					for _, id := range got.Deleted {
						e.printf("deleted %s\n", id)
					}
				}
				var problems []string
				for _, id := range got.Active {
					problems = append(problems, fmt.Sprintf("run %s is not settled: cancel it first", id))
				}
				for _, id := range got.Missing {
					problems = append(problems, fmt.Sprintf("no run %q", id))
				}
				if len(problems) > 0 {
					return &exitError{code: ExitFailure, err: fmt.Errorf("%s", strings.Join(problems, "; "))}
				}
				return nil
			})
		},
	}
}
