package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/internal/atomicfile"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
)

func (e *env) sessionsExportCommand() *cobra.Command {
	var format, output string
	cmd := &cobra.Command{
		Use:   "export <session-id>",
		Short: "Write a whole session out as JSON or Markdown",
		Long: `Write a session with every message (and the full summary of its memory file)
to stdout, or to --output FILE (written whole or not at all). --format json
(the default) is machine-readable; md is a readable Markdown transcript.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != sessions.FormatJSON && format != sessions.FormatMarkdown {
				return usagef("--format %q: use json or md", format)
			}
			ctx := cmd.Context()
			m, done, err := e.openSessions(ctx, false, nil)
			if err != nil {
				return err
			}
			defer done()
			p := sessions.ExportParams{SessionID: args[0], Format: format}
			if output == "" {
				return m.Export(ctx, e.stdio.Out, p)
			}
			return writeExport(ctx, m, output, p)
		},
	}
	cmd.Flags().StringVar(&format, "format", sessions.FormatJSON, "json or md")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to FILE instead of stdout")
	return cmd
}

// writeExport streams an export into a temporary file beside path and
// renames it into place, so path holds a whole export or is untouched.
func writeExport(ctx context.Context, m *sessions.Manager, path string, p sessions.ExportParams) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("export to %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = m.Export(ctx, f, p); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("export to %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("export to %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("export to %s: %w", path, err)
	}
	return atomicfile.SyncDir(dir)
}

func (e *env) sessionsArchivesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "archives <session-id>",
		Short: "List a session's compaction archives, newest first",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			m, done, err := e.openSessions(ctx, false, nil)
			if err != nil {
				return err
			}
			defer done()
			list, err := m.Archives(ctx, args[0])
			if err != nil {
				return err
			}
			if e.json {
				if list == nil {
					list = []*store.Archive{}
				}
				return e.printJSON(map[string]any{"archives": list})
			}
			if len(list) == 0 {
				e.printf("no archives\n")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdio.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "ARCHIVE\tSTATUS\tMESSAGES\tCREATED\tERROR\n")
			for _, a := range list {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", a.ID, a.Status, a.MessageCount, a.CreatedAt.Local().Format(time.DateTime), a.Error)
			}
			return tw.Flush()
		},
	}
}
