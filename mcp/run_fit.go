package mcp

import (
	"fmt"

	"github.com/cairnhq/cairn/runs"
)

// A tool that answers with a run (launch_run, get_run, answer_run,
// cancel_run) and the cairn://runs/{id} resource keep it under the reply's
// budget: its largest free-form fields are cut, each listed in the run's
// cut field with where the whole value is.

// fitRun is r cut to fit a reply of budget bytes. The room is halved when
// the text block repeats the JSON.
func fitRun(r *runs.Run, budget int) *runs.Run {
	return r.Fit(budget-replyReserve, func(field string, size int) string {
		if need := size + 4*replyReserve; need <= MaxReplyBytes {
			return fmt.Sprintf("get_run with run_id %s and max_bytes %d returns it whole", r.ID, min(MaxReplyBytes, 2*need))
		}
		return "too large for one reply: read_run_output returns the run's output it came from"
	})
}

// fitReply cuts a run answer to fit budget; any other answer is returned
// as it is.
func fitReply[Out any](out Out, budget int) Out {
	if r, ok := any(out).(*runs.Run); ok && r != nil {
		if fitted, ok := any(fitRun(r, budget)).(Out); ok {
			return fitted
		}
	}
	return out
}
