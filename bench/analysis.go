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
		disk := ""
		if v := val(r, 9, "append 4 KiB + fsync"); v != "—" {
			disk = fmt.Sprintf(" The disk sustains %s of 4 KiB append+fsync (figure 9): a peer with more commits than fsyncs the disk allows per job is bound by the disk, ours by its writer.", v)
		}
		return fmt.Sprintf("This run: ours %s at FULL and %s at NORMAL; River at its best %s and %s; goqite %s and %s. "+
			"The peers are bound by their commits: River %s commits and %s fsyncs per job at FULL, goqite %s and %s (a transaction for the send, "+
			"the receive and the delete); ours groups %s commits per run (%s fsyncs) and is bound instead by its single writer, busy %s of the time "+
			"(figure 2 says what that writer costs). The cheapest run (`if: false`, no step start) does %s. "+
			"Where CPU rather than the disk is what the process lacks (NORMAL, or a loaded machine: see the load average), CPU per job decides: "+
			"ours %s per run at NORMAL, River %s, goqite %s per job.%s",
			val(r, 1, "ours, FULL"), val(r, 1, "ours, NORMAL"), val(r, 1, "River, FULL"), val(r, 1, "River, NORMAL"),
			val(r, 1, "goqite, FULL"), val(r, 1, "goqite, NORMAL"),
			val(r, 1, "River, FULL: commits"), val(r, 1, "River, FULL: fsyncs"), val(r, 1, "goqite, FULL: commits"), val(r, 1, "goqite, FULL: fsyncs"),
			val(r, 1, "ours, FULL: commits"), val(r, 1, "ours, FULL: fsyncs"), val(r, 2, "ours, FULL: writer goroutine busy"),
			val(r, 1, "diagnostic: ours, FULL, the cheapest run"),
			val(r, 1, "ours, NORMAL: CPU"), val(r, 1, "River, NORMAL: CPU"), val(r, 1, "goqite, NORMAL: CPU"), disk)
	},
	2: func(r *recorder) string { return engineShareLimit(r) },
	3: func(r *recorder) string {
		return fmt.Sprintf("This run: launch_run p50 %s against a floor of fsync p50 %s + ping p50 %s; p99 %s. Measured parts of a call: "+
			"a tool call that reads (get_run) takes %s, so the MCP layer adds little over ping; runs.Engine.Launch alone, in process, takes %s (one durable commit "+
			"of the queued run); and a refused cancel_run, whose only write is its audit entry, takes %s: an audited call commits its audit entry after the "+
			"action and before it answers, so launch_run waits for two commits in a row (the run's, then its audit entry's), and in a serve either may also wait "+
			"behind the commit of the previous run's settle. One commit per call (the audit entry written in the run's transaction, or committed after the answer) "+
			"is the lever; the first needs a store operation that takes both, the second gives up the audit entry's durability at the answer.",
			val(r, 3, "launch_run p50"), val(r, 3, "fsync p50"), val(r, 3, "ping p50"), val(r, 3, "launch_run p99"),
			val(r, 3, "diagnostic: get_run"), val(r, 3, "diagnostic: runs.Engine.Launch"), val(r, 3, "diagnostic: cancel_run"))
	},
	4: func(r *recorder) string {
		return fmt.Sprintf("The scheduler prepares the runs of a slot about 2 s ahead and at the slot commits the fires in slices (%s store calls), so each "+
			"fire is durable with its own slice: the first after %s, half after %s, the last after %s; the same slot in one transaction lands every fire at "+
			"once, after %s (p99 %s). What remains is the store's cost per fire on this 2-core machine, about (max − min) / (n − 1) = %s: each fire inserts "+
			"its fire row and its queued run (the runs table and its indexes) and writes its automation's state, each slice costs a commit, and the runs "+
			"fired first start executing and compete with the later slices for the single writer (their claims and settles), so the last slices land later "+
			"than one transaction would. The goals need the store's cost per fire an order of magnitude lower (a batched run insert, fewer indexes on runs), "+
			"or the fired runs' executions to yield the writer to the slices still to commit.",
			val(r, 4, "diagnostic: store calls"), val(r, 4, "fire lag min"), val(r, 4, "fire lag p50"), val(r, 4, "fire lag max"),
			val(r, 4, "diagnostic: all fires in one transaction, p50"), val(r, 4, "diagnostic: all fires in one transaction, p99"), val(r, 4, "diagnostic: lag added per fire"))
	},
	5: func(r *recorder) string {
		return fmt.Sprintf("Adoption p50 %s, max %s over the kills. A peer waits on the exit of each run's owner (a pidfd in the runtime's poller): "+
			"the kernel frees the dead owner's run lock and wakes the peer at once, which then lists the runnable runs, takes the lock and claims the run "+
			"in one commit (a durable fsync at FULL). What is left is that commit and the scheduling of the 2-core machine; a miss here is the machine's "+
			"load at that instant (see `uptime` in the log).", val(r, 5, "SIGKILL to adopted p50"), val(r, 5, "SIGKILL to adopted max"))
	},
	6: func(r *recorder) string {
		return fmt.Sprintf("The busiest idle serve used %s (median serve %s, %s wake-ups a second). The serves wait on the owner's exit and on "+
			"writes to the database's files (inotify) instead of polling; what wakes them is the owner's lease renewal every second (a write to the "+
			"database: each serve looks at the run changes once, one indexed query), the store's check of its file every second, and the runtime's timers.",
			val(r, 6, "CPU of the busiest"), val(r, 6, "CPU of the median"), val(r, 6, "diagnostic: wake-ups"))
	},
	7: func(r *recorder) string {
		return fmt.Sprintf("p50 %s, p99 %s. A line goes from the step's process through its supervisor, which appends it to the run's journal file; "+
			"the serve's follower waits on that file (inotify) and reads the new records, then the reply crosses the stdio pipe. "+
			"The time printed is taken by `date` just before `echo` writes the line, so the fork and exit of `date` count too.",
			val(r, 7, "line to client p50"), val(r, 7, "line to client p99"))
	},
	8: func(r *recorder) string {
		return fmt.Sprintf("Start-up with the runs takes %s and with an empty store %s, both with the database evicted; until tools/list the serve read "+
			"%s from the disk with the runs and %s with an empty store, so start-up does not read in proportion to the runs (no count, listing or adoption "+
			"scan of them on the way). What remains is starting the process itself on this machine: compare the load average in the Machine table. "+
			"Idle RSS %s, with the automations %s.",
			val(r, 8, "start to tools/list"), val(r, 8, "empty store"), val(r, 8, "diagnostic: KiB read from the disk until tools/list, 1"),
			val(r, 8, "diagnostic: KiB read from the disk until tools/list, empty"), val(r, 8, "RSS idle"), val(r, 8, "RSS with"))
	},
	10: func(r *recorder) string {
		return fmt.Sprintf("The append to the big session (%s) costs more than to a small one (%s): look for work proportional to the session's size in sessions.Append "+
			"(a count or max over its messages instead of the session row's counters, an index that does not start with the session id).",
			val(r, 10, "one append to the big session"), val(r, 10, "one append to a session of 10"))
	},
	11: func(r *recorder) string {
		return fmt.Sprintf("This run: ours %s on PostgreSQL, River at its best setting %s. Each of our runs is %s write transactions (create, the step's start, "+
			"settle), %s in all; one write transaction on this server takes %s (its COMMIT waits for the WAL flush). Writers share no row: a write logs its "+
			"run's change and readers number the committed ones (sampled during our runs, %s of the server's active backends were waiting for the run_changes "+
			"row lock, which only readers take). Each of our runs pays three commits of its own, each waiting for the WAL flush, while River batches its inserts' "+
			"and completions' commits, so it pays a fraction of a commit per job. The lever is in store/postgres: group the step-start and settle writes of "+
			"concurrent runs into one transaction, as River does.",
			val(r, 11, "ours, PostgreSQL"), val(r, 11, "River at its best"), val(r, 11, "diagnostic: ours, store write transactions per run"),
			val(r, 11, "diagnostic: ours, store write transactions per second"), val(r, 11, "diagnostic: one write transaction"),
			val(r, 11, "diagnostic: ours, share of active"))
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
