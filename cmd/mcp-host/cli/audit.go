package cli

import (
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/store"
)

// auditPage is audit's JSON: a page of entries and the cursor after it.
type auditPage struct {
	Entries    []*store.AuditEntry `json:"entries"`
	NextCursor string              `json:"next_cursor,omitempty"`
}

// auditCommand: audit.
func (e *env) auditCommand() *cobra.Command {
	var since, cursor string
	var limit int
	cmd := &cobra.Command{
		Use:   "audit [--since D] [--limit N] [--cursor C]",
		Short: "List what agents did: principal, time, tool, a digest of the arguments, outcome",
		Long: `List the audit trail of agent actions, oldest first: launches, answers, cancels,
automation and session changes, and answers people gave through the client's
prompt. The arguments are kept only as a SHA-256 digest of their canonical JSON
(they may hold secrets). Entries are deleted with runs, by retention.max_age.`,
		Example: `  mcp-host audit --since 24h
  mcp-host audit --since 2026-12-01 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := store.AuditFilter{Limit: limit}
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return usagef("--since %q: %v", since, err)
				}
				f.Since = t
			}
			if cursor != "" {
				n, err := strconv.ParseInt(cursor, 10, 64)
				if err != nil || n < 0 {
					return usagef("--cursor %q: pass back the next_cursor a previous page printed", cursor)
				}
				f.After = n
			}
			if limit < 0 || limit > store.MaxAuditPage {
				return usagef("--limit %d: use 1 to %d", limit, store.MaxAuditPage)
			}
			return e.withHost(cmd.Context(), false, func(h *host.Host) error {
				list, err := h.Store.ListAudit(cmd.Context(), f)
				if err != nil {
					return err
				}
				page := auditPage{Entries: list}
				if len(list) == f.AuditLimit() {
					page.NextCursor = strconv.FormatInt(list[len(list)-1].Seq, 10)
				}
				if e.json {
					return e.printJSON(page)
				}
				e.printAudit(page)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "only entries since: a duration back (24h, 7d) or a date (2026-12-01, RFC 3339)")
	cmd.Flags().IntVar(&limit, "limit", 100, fmt.Sprintf("most entries per page (at most %d)", store.MaxAuditPage))
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue after a previous page (its next_cursor)")
	return cmd
}

func (e *env) printAudit(p auditPage) {
	if len(p.Entries) == 0 {
		e.printf("no audit entries\n")
		return
	}
	w := tabwriter.NewWriter(e.stdio.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "TIME\tPRINCIPAL\tCONNECTION\tTOOL\tOUTCOME\tSUBJECT\tARGS")
	for _, a := range p.Entries {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.At.Local().Format(time.DateTime+" MST"), a.Principal, dash(a.Connection), a.Tool, a.Outcome, dash(a.Subject), shortDigest(a.ArgsDigest))
	}
	w.Flush()
	if p.NextCursor != "" {
		e.printf("more: mcp-host audit --cursor %s\n", p.NextCursor)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shortDigest keeps enough of a digest to compare by eye.
func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

// parseSince reads a duration back from now (24h, 7d) or a date.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := host.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, time.DateTime, time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("use a duration (24h, 7d) or a date (2026-12-01, 2026-12-01T15:04:05Z)")
}
