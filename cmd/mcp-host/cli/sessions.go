package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cairnhq/cairn/internal/page"
	"github.com/cairnhq/cairn/internal/text"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
)

// sessionCommands: sessions list|show|create|append|compact|delete|export|archives.
func (e *env) sessionCommands() []*cobra.Command {
	var lo listSessionsOptions
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "Keep agent sessions: list, show, create, append, compact, delete, export",
		Long: `Sessions are agent conversations kept in the workspace's store. Many processes
can append to one session at once. Compaction replaces all but the last few
messages with a summary: the old state is archived in the store, the full
summary is written to <state>/memory/<session-id>.md, and a preview of at most
32 KiB replaces the old turns. The newest five archives are kept per session
(sessions.max_archives in .cairn/config.yaml; 0 keeps all).

Without a subcommand, sessions lists them.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return e.listSessions(cmd.Context(), lo) },
	}
	addListFlags(cmd, &lo)
	cmd.AddCommand(e.sessionsListCommand(), e.sessionsShowCommand(), e.sessionsCreateCommand(), e.sessionsAppendCommand(),
		e.sessionsCompactCommand(), e.sessionsDeleteCommand(), e.sessionsExportCommand(), e.sessionsArchivesCommand())
	return []*cobra.Command{cmd}
}

// openSessions opens the workspace's host for its session manager; the
// returned func closes it. write is open's: commands that change sessions
// set it. maxArchives, when set, overrides sessions.max_archives.
func (e *env) openSessions(ctx context.Context, write bool, maxArchives *int) (*sessions.Manager, func(), error) {
	h, err := e.open(ctx, write, func(c *host.Config) { c.MaxArchives = maxArchives })
	if err != nil {
		return nil, nil, err
	}
	return h.Sessions, func() { h.Close() }, nil
}

type listSessionsOptions struct {
	limit  int
	cursor string
	page   pageFlags
}

func addListFlags(cmd *cobra.Command, o *listSessionsOptions) {
	cmd.Flags().IntVar(&o.limit, "limit", sessions.DefaultPageLimit, fmt.Sprintf("sessions per page (1 to %d)", sessions.MaxPageLimit))
	cmd.Flags().StringVar(&o.cursor, "cursor", "", "continue a listing from the cursor a previous page printed")
	o.page.register(cmd)
}

func (e *env) sessionsListCommand() *cobra.Command {
	var o listSessionsOptions
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List sessions, newest first",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, args []string) error { return e.listSessions(cmd.Context(), o) },
	}
	addListFlags(cmd, &o)
	return cmd
}

func (e *env) listSessions(ctx context.Context, o listSessionsOptions) error {
	if o.limit < 1 || o.limit > sessions.MaxPageLimit {
		return usagef("--limit %d: use 1 to %d", o.limit, sessions.MaxPageLimit)
	}
	room, err := o.page.room()
	if err != nil {
		return err
	}
	m, done, err := e.openSessions(ctx, false, nil)
	if err != nil {
		return err
	}
	defer done()
	if e.json {
		// The sessions that fit in --max-bytes, printed.
		list, next, err := page.FillSized(o.limit, room, page.Indented(2), func(n int) ([]*store.Session, string, error) {
			pg, err := m.List(ctx, sessions.ListParams{Cursor: o.cursor, Limit: n})
			if err != nil {
				return nil, "", err
			}
			return pg.Sessions, pg.NextCursor, nil
		}, func(s *store.Session) string { return "session " + s.ID })
		if err != nil {
			return flagError(err)
		}
		if list == nil {
			list = []*store.Session{}
		}
		return e.printJSON(&sessions.SessionPage{Sessions: list, NextCursor: next})
	}
	page, err := m.List(ctx, sessions.ListParams{Cursor: o.cursor, Limit: o.limit})
	if err != nil {
		return err
	}
	if len(page.Sessions) == 0 {
		e.printf("no sessions\n")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "ID\tMESSAGES\tUPDATED\tTITLE\n")
	for _, s := range page.Sessions {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", s.ID, s.MessageCount, s.UpdatedAt.Local().Format(time.DateTime), text.OneLine(s.Title, 60))
	}
	tw.Flush()
	if page.NextCursor != "" {
		e.printf("more: mcp-host sessions list --cursor %s\n", page.NextCursor)
	}
	return nil
}

func (e *env) sessionsShowCommand() *cobra.Command {
	var (
		cursor string
		limit  int
		pf     pageFlags
	)
	cmd := &cobra.Command{
		Use:   "show <session-id>",
		Short: "Print a session as a readable transcript (--json: the session and its messages)",
		Long: `Print a session as a readable transcript. Without --limit it prints every
message; with --limit N (and --cursor C) one page, and the cursor of the next.
With --json it prints one page: the session and the messages that fit in
--max-bytes (at most --limit), and next_cursor when more follow.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("limit") && (limit < 1 || limit > sessions.MaxPageLimit) {
				return usagef("--limit %d: use 1 to %d", limit, sessions.MaxPageLimit)
			}
			room, err := pf.room()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			m, done, err := e.openSessions(ctx, false, nil)
			if err != nil {
				return err
			}
			defer done()
			if e.json {
				return e.printSessionPage(ctx, m, sessions.ReadParams{SessionID: args[0], Cursor: cursor, Limit: cmp.Or(limit, sessions.MaxPageLimit)}, room)
			}
			paged := cmd.Flags().Changed("limit") || cursor != ""
			page, err := m.Read(ctx, sessions.ReadParams{SessionID: args[0], Cursor: cursor, Limit: limit})
			if err != nil {
				return err
			}
			for !paged && page.NextCursor != "" {
				next, err := m.Read(ctx, sessions.ReadParams{SessionID: args[0], Cursor: page.NextCursor, Limit: sessions.MaxPageLimit})
				if err != nil {
					return err
				}
				page.Messages = append(page.Messages, next.Messages...)
				page.NextCursor = next.NextCursor
			}
			if err := sessions.Transcript(e.stdio.Out, page.Session, page.Messages); err != nil {
				return err
			}
			if page.NextCursor != "" {
				e.printf("\nmore: mcp-host sessions show %s --cursor %s\n", page.Session.ID, page.NextCursor)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&cursor, "cursor", "", "start after this message (a cursor a previous page printed)")
	cmd.Flags().IntVar(&limit, "limit", 0, fmt.Sprintf("print one page of at most N messages (1 to %d)", sessions.MaxPageLimit))
	pf.register(cmd)
	return cmd
}

// printSessionPage prints, as JSON, the session p names and the messages
// after p.Cursor that fit in room with it.
func (e *env) printSessionPage(ctx context.Context, m *sessions.Manager, p sessions.ReadParams, room int) error {
	sess, err := m.Get(ctx, p.SessionID)
	if err != nil {
		return err
	}
	head, err := page.Indented(1)(sess) // the session's own fields come out of the room
	if err != nil {
		return err
	}
	if room-head < page.MinBytes/2 {
		return flagError(&page.TooLargeError{What: "session " + sess.ID, Size: head})
	}
	// A message too large for a page alone comes cut, and the next page
	// goes on after it.
	msgs, next, err := page.FillOrCut(p.Limit, room-head, page.Indented(2), func(n int) ([]*store.Message, string, error) {
		q := p
		q.Limit = n
		pg, err := m.Read(ctx, q)
		if err != nil {
			return nil, "", err
		}
		sess = pg.Session
		return pg.Messages, pg.NextCursor, nil
	}, func(msg *store.Message) string { return "message " + msg.ID }, func(msg *store.Message, size int) *store.Message {
		return sessions.CutMessage(msg, size, "read it whole with mcp-host sessions export "+p.SessionID)
	})
	if err != nil {
		return flagError(err)
	}
	if msgs == nil {
		msgs = []*store.Message{}
	}
	return e.printJSON(&sessions.MessagePage{Session: sess, Messages: msgs, NextCursor: next})
}

func (e *env) sessionsCreateCommand() *cobra.Command {
	var p sessions.CreateParams
	cmd := &cobra.Command{
		Use:   "create [session-id]",
		Short: "Create a session (an id that exists returns that session, unchanged)",
		Args:  rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				p.ID = args[0]
			}
			ctx := cmd.Context()
			m, done, err := e.openSessions(ctx, true, nil)
			if err != nil {
				return err
			}
			defer done()
			s, created, err := m.Create(ctx, p)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(map[string]any{"session": s, "created": created})
			}
			if created {
				e.printf("created session %s\n", s.ID)
			} else {
				e.printf("session %s already exists (%d message(s)); left unchanged\n", s.ID, s.MessageCount)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&p.Title, "title", "", "the session's title")
	cmd.Flags().StringVar(&p.ParentID, "parent", "", "the id of the session this one belongs to")
	return cmd
}

func (e *env) sessionsAppendCommand() *cobra.Command {
	var role, text, file, metadata string
	cmd := &cobra.Command{
		Use:   "append <session-id> (--text TEXT [--role ROLE] | --file FILE)",
		Short: "Append messages to a session, all or none",
		Long: `Append one text message (--text, with --role user, assistant, system or tool)
or the messages in a JSON file (--file, "-" for stdin): an array of
{"role", "text" or "parts", "metadata", "id"} objects, where parts is an array
of {"type": "text" | "tool_call" | "tool_result", ...}. One message may hold
1 MiB and one append 4 MiB.`,
		Example: `  mcp-host sessions append ses_1 --text "Summarise the build log"
  mcp-host sessions append ses_1 --role assistant --text "Done."
  mcp-host sessions append ses_1 --file messages.json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var msgs []sessions.MessageInput
			switch {
			case file != "" && (cmd.Flags().Changed("text") || cmd.Flags().Changed("role") || metadata != ""):
				return usagef("give either --file or --text (with --role, --metadata), not both")
			case file != "":
				var err error
				if msgs, err = e.readMessagesFile(file); err != nil {
					return err
				}
			case cmd.Flags().Changed("text"):
				msgs = []sessions.MessageInput{{Role: store.Role(role), Text: text, Metadata: json.RawMessage(metadata)}}
			default:
				return usagef("give the message with --text TEXT or --file FILE")
			}
			ctx := cmd.Context()
			m, done, err := e.openSessions(ctx, true, nil)
			if err != nil {
				return err
			}
			defer done()
			res, err := m.Append(ctx, args[0], msgs)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(res)
			}
			first, last := res.Messages[0].Seq, res.Messages[len(res.Messages)-1].Seq
			seqs := fmt.Sprintf("#%d", first)
			if last != first {
				seqs = fmt.Sprintf("#%d–#%d", first, last)
			}
			e.printf("appended %d message(s) to %s (%s); it holds %d\n", len(res.Messages), res.Session.ID, seqs, res.Session.MessageCount)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&role, "role", string(store.RoleUser), "with --text: user, assistant, system or tool")
	f.StringVar(&text, "text", "", "the message's text")
	f.StringVar(&metadata, "metadata", "", "with --text: a JSON object kept with the message")
	f.StringVar(&file, "file", "", `a JSON array of messages ("-" reads stdin)`)
	return cmd
}

// readMessagesFile reads a JSON array of messages (or one message).
func (e *env) readMessagesFile(name string) ([]sessions.MessageInput, error) {
	var r io.Reader = e.stdio.In
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("read messages: %w", err)
		}
		defer f.Close()
		r = f
	}
	// More than an append may carry is refused without reading it all.
	b, err := io.ReadAll(io.LimitReader(r, 2*sessions.MaxAppendBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read messages from %s: %w", name, err)
	}
	if len(b) > 2*sessions.MaxAppendBytes {
		return nil, fmt.Errorf("read messages from %s: %w", name, &sessions.LimitError{What: "the file", Size: len(b), Limit: sessions.MaxAppendBytes, Per: "per append"})
	}
	trimmed := strings.TrimSpace(string(b))
	var msgs []sessions.MessageInput
	if strings.HasPrefix(trimmed, "{") {
		var one sessions.MessageInput
		err = json.Unmarshal(b, &one)
		msgs = []sessions.MessageInput{one}
	} else {
		err = json.Unmarshal(b, &msgs)
	}
	if err != nil {
		return nil, fmt.Errorf("read messages from %s: not a JSON array of messages: %w", name, err)
	}
	return msgs, nil
}

func (e *env) sessionsCompactCommand() *cobra.Command {
	var (
		summary, summaryFile string
		keepLast             int
		maxArchives          int
	)
	cmd := &cobra.Command{
		Use:   "compact <session-id> (--summary TEXT | --summary-file FILE)",
		Short: "Replace all but the last messages of a session with a summary",
		Long: `Compact a session: archive its complete state in the store, write the full
summary to <state>/memory/<session-id>.md (staged, then atomically published),
and replace all but the last --keep-last messages with one system message
holding a preview of the summary (at most 32 KiB, pointing at the memory file).
A failed or interrupted compaction changes neither the session nor the memory
file. Afterwards archives beyond the retention target are deleted.`,
		Example: `  mcp-host sessions compact ses_1 --summary-file summary.md
  mcp-host sessions compact ses_1 --summary "We agreed on plan B." --keep-last 2`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case cmd.Flags().Changed("summary") == (summaryFile != ""):
				return usagef("give the summary with exactly one of --summary TEXT or --summary-file FILE")
			case keepLast < 0:
				return usagef("--keep-last %d: must not be negative", keepLast)
			case cmd.Flags().Changed("max-archives") && maxArchives < 0:
				return usagef("--max-archives %d: use 0 (keep all) or more", maxArchives)
			}
			if summaryFile != "" {
				b, err := e.readFileOrStdin(summaryFile)
				if err != nil {
					return fmt.Errorf("read summary: %w", err)
				}
				summary = string(b)
			}
			var override *int
			if cmd.Flags().Changed("max-archives") {
				override = &maxArchives
			}
			ctx := cmd.Context()
			m, done, err := e.openSessions(ctx, true, override)
			if err != nil {
				return err
			}
			defer done()
			res, err := m.Compact(ctx, sessions.CompactParams{SessionID: args[0], Summary: summary, KeepLast: &keepLast})
			if err != nil {
				return err
			}
			for _, w := range res.Warnings {
				fmt.Fprintf(e.stdio.Err, "mcp-host: warning: %s\n", w)
			}
			if e.json {
				return e.printJSON(res)
			}
			e.printf("compacted %d message(s) of %s into a summary; it holds %d message(s)\n", res.Compacted, res.Session.ID, res.Session.MessageCount)
			e.printf("  archive      %s\n", res.Archive.ID)
			if res.MemoryPath != "" {
				e.printf("  memory file  %s\n", res.MemoryPath)
			}
			trunc := ""
			if res.Truncated {
				trunc = " (truncated)"
			}
			e.printf("  preview      %d bytes%s\n", res.PreviewBytes, trunc)
			if len(res.Pruned) > 0 {
				e.printf("  pruned       %s\n", strings.Join(res.Pruned, ", "))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&summary, "summary", "", "the summary text")
	f.StringVar(&summaryFile, "summary-file", "", `read the summary from FILE ("-" reads stdin)`)
	f.IntVar(&keepLast, "keep-last", sessions.DefaultKeepLast, "how many of the newest messages stay after the summary")
	f.IntVar(&maxArchives, "max-archives", 0, "complete archives kept for the session, 0 keeps all (when not given: sessions.max_archives from .cairn/config.yaml, else 5)")
	return cmd
}

func (e *env) readFileOrStdin(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(e.stdio.In)
	}
	return os.ReadFile(name)
}

func (e *env) sessionsDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete <session-id>",
		Short: "Delete a session with its messages, archives and memory file",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			m, done, err := e.openSessions(ctx, true, nil)
			if err != nil {
				return err
			}
			defer done()
			if err := m.Delete(ctx, args[0]); err != nil {
				return err
			}
			if e.json {
				return e.printJSON(map[string]string{"deleted": args[0]})
			}
			e.printf("deleted session %s\n", args[0])
			return nil
		},
	}
}
