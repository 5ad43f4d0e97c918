package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/internal/page"
	"github.com/cairnhq/cairn/runs"
)

// The --json output of a command that lists (runs, automations list,
// sessions list, sessions show) is a page bounded in bytes as MCP replies
// are (package page): printed, it takes at most --max-bytes, and its next
// cursor continues exactly after its last item. A single run printed by
// runs show --json is cut to fit, as get_run is.

// pageFlags is --max-bytes.
type pageFlags struct{ maxBytes int }

func (p *pageFlags) register(cmd *cobra.Command) {
	cmd.Flags().IntVar(&p.maxBytes, "max-bytes", page.DefaultBytes,
		fmt.Sprintf("with --json: most bytes the printed page takes (%d to %d); the next cursor continues after it", page.MinBytes, page.MaxBytes))
}

// room is what a page's items may take, or a usage error.
func (p pageFlags) room() (int, error) {
	if p.maxBytes < page.MinBytes || p.maxBytes > page.MaxBytes {
		return 0, usagef("--max-bytes %d: use %d to %d", p.maxBytes, page.MinBytes, page.MaxBytes)
	}
	return p.maxBytes - page.Reserve, nil
}

// flagError words a page's too-large item with the CLI's flag.
func flagError(err error) error {
	var tl *page.TooLargeError
	if errors.As(err, &tl) {
		tl.Arg = "--max-bytes"
	}
	return err
}

// fitRun cuts r to fit a page of maxBytes printed with printJSON's indent.
func fitRun(r *runs.Run, maxBytes int) *runs.Run {
	return fitRunIn(r, maxBytes-page.Reserve, page.Indented(0))
}

// fitRunIn cuts r to room bytes as size measures them (a run in a page
// of runs --json: one too large for a page on its own).
func fitRunIn(r *runs.Run, room int, size page.Sizer) *runs.Run {
	return r.FitSized(room, size, func(field string, size int) string {
		if need := 2*size + 4*page.Reserve; need <= page.MaxBytes {
			return fmt.Sprintf("mcp-host runs show %s --json --max-bytes %d prints it whole", r.ID, need)
		}
		return "too large for one page: the run's journal (mcp-host watch " + r.ID + ") has the output it came from"
	})
}
