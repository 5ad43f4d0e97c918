package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/store/sqlite"
)

func (e *env) backupCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "backup <dest-file>",
		Short: "Write a consistent copy of this workspace's database (safe while mcp-host runs)",
		Long: `Write a consistent copy of the workspace's state database to a new file,
while other mcp-host processes go on working. Never copy a live
state.sqlite3 by hand: its WAL holds recent commits. The destination must
not exist. Run journals (output/) and memory files (memory/) are plain files:
copy them alongside if you want them too.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if e.dryRun {
				return usagef("backup has nothing to copy under --dry-run")
			}
			ws, err := e.workspace()
			if err != nil {
				return err
			}
			if _, err := os.Lstat(ws.DBPath()); err != nil {
				return fmt.Errorf("no state for workspace %s yet (%s): nothing to back up", ws.Root, ws.DBPath())
			}
			dest, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			st, err := sqlite.Open(cmd.Context(), ws.DBPath(), sqlite.Options{ReadOnly: true})
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.Backup(cmd.Context(), dest); err != nil {
				return err
			}
			if e.json {
				return e.printJSON(map[string]string{"workspace": ws.Root, "backup": dest})
			}
			e.printf("backed up %s to %s\n", ws.DBPath(), dest)
			return nil
		},
	}
}
