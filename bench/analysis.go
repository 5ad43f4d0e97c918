package main

import (
	"fmt"
	"math"
	"strings"
)

// limits explains, per figure, what limits a figure that missed its goal.
// The causes come from CPU profiles of the harness (`go run . -only N
// -cpuprofile cpu.out`, `go tool pprof`) and from the diagnostic rows each
// run measures; the text quotes this run's own numbers.
var limits = map[int]func(*recorder) string{
	1: func(r *recorder) string {
		return fmt.Sprintf("This run: ours %s at FULL and %s at NORMAL; River at its best %s and %s; goqite %s and %s. "+
			"The peers are bound by their commits: River %s commits and %s fsyncs per job at FULL, goqite %s and %s (a transaction for the send, "+
			"the receive and the delete); ours groups %s commits per run (%s fsyncs) and is bound instead by its single writer, busy %s of the time "+
			"(figure 2 says what that writer costs). The cheapest run (`if: false`, no step start) does %s. "+
			"Where CPU rather than the disk is what the process lacks (NORMAL, or a loaded machine: see the load average), CPU per job decides: "+
			"ours %s per run at NORMAL, River %s, goqite %s per job.",
			val(r, 1, "ours, FULL"), val(r, 1, "ours, NORMAL"), val(r, 1, "River, FULL"), val(r, 1, "River, NORMAL"),
			val(r, 1, "goqite, FULL"), val(r, 1, "goqite, NORMAL"),
			val(r, 1, "River, FULL: commits"), val(r, 1, "River, FULL: fsyncs"), val(r, 1, "goqite, FULL: commits"), val(r, 1, "goqite, FULL: fsyncs"),
			val(r, 1, "ours, FULL: commits"), val(r, 1, "ours, FULL: fsyncs"), val(r, 2, "ours, FULL: writer goroutine busy"),
			val(r, 1, "diagnostic: ours, FULL, the cheapest run"),
			val(r, 1, "ours, NORMAL: CPU"), val(r, 1, "River, NORMAL: CPU"), val(r, 1, "goqite, NORMAL: CPU"))
	},
	2: func(r *recorder) string { return engineShareLimit(r) },
	3: func(r *recorder) string {
		return fmt.Sprintf("Not the transport: a ping takes %s over the same pipes, while runs.Engine.Launch alone, in process, takes %s, almost all of it the durable "+
			"commit of the new run (an fsync at FULL, p50 %s on this disk, plus about 14 page writes), which in a serve also waits behind or shares the commit of the "+
			"previous run's settle. mcp-go adds roughly 0.2 ms of CPU per call (two JSON decodes and a goroutine per request). Next levers: a cheaper per-call path in "+
			"the MCP layer, and fewer pages per commit.",
			val(r, 3, "ping p50"), val(r, 3, "diagnostic: runs.Engine.Launch"), val(r, 9, "latency p50"))
	},
	4: func(r *recorder) string {
		return fmt.Sprintf("The scheduler prepares the runs of the next slot about 2 s ahead and commits every fire due at that instant in one store operation (store.FireMany: "+
			"one transaction, prepared multi-row statements), so all fires land together: the first after %s, the last after %s. What remains is the cost of that one "+
			"transaction on this 2-core machine, measured inside it: inserting the 1,000 queued runs (each row goes into the runs table and its five indexes) is about half, "+
			"reading the automations and writing their states most of the rest, the commit itself a few milliseconds. Next levers: a batched run insert (one multi-row "+
			"statement), and fewer indexes on runs.",
			val(r, 4, "fire lag min"), val(r, 4, "fire lag max"))
	},
	5: func(r *recorder) string {
		return fmt.Sprintf("The append to the big session (%s) costs more than to a small one (%s): look for work proportional to the session's size in sessions.Append "+
			"(a count or max over its messages instead of the session row's counters, an index that does not start with the session id).",
			val(r, 5, "one append to the big session"), val(r, 5, "one append to a session of 10"))
	},
	6: func(r *recorder) string {
		return fmt.Sprintf("Start-up with the runs (%s) against an empty store (%s): something reads the runs table on the way to tools/list "+
			"(adoption at start should use the status index; nothing should read settled runs).", val(r, 6, "with"), val(r, 6, "empty store"))
	},
	7: func(r *recorder) string {
		return fmt.Sprintf("Idle %s, with the automations %s: profile the heap (`go tool pprof -inuse_space`) of a serve holding the scheduler lock; "+
			"the scheduler should keep one small entry per automation (id, next due), not whole records.", val(r, 7, "RSS idle"), val(r, 7, "RSS with"))
	},
	8: func(r *recorder) string {
		return fmt.Sprintf("Adoption took %s (median; spread in the table): a peer looks for runs whose lock is free every runs.Options.AdoptEvery (100 ms), "+
			"so a dead owner's run waits for the peer's next pass, then one commit to claim it.", val(r, 8, "SIGKILL to adopted"))
	},
}

// val is the median of the first row of fig whose name starts with prefix,
// formatted with its unit; "—" when there is none.
func val(r *recorder, fig int, prefix string) string {
	for _, x := range r.figRows(fig) {
		if strings.HasPrefix(x.Name, prefix) {
			s := summarise(x.Samples)
			if math.IsNaN(s.Median) {
				return "—"
			}
			return formatValue(s.Median, x.Unit)
		}
	}
	return "—"
}
