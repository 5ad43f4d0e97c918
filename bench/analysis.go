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
		if v := val(r, 2, "write+fsync 4 KiB"); v != "—" {
			disk = fmt.Sprintf(" The disk sustains %s of 4 KiB write+fsync (figure 2), so at FULL neither side comes near the disk's limit: both are limited by CPU work per run or job on this 2-core machine (riversqlite also completes jobs one row at a time).", v)
		}
		return fmt.Sprintf("This run: ours %s at FULL and %s at NORMAL, River %s and %s.%s "+
			"The diagnostic rows say where our time goes: with run journals and run locks kept in memory (no file created per run) the same workload does %s, "+
			"and with the memory store as well (the run engine alone) %s. "+
			"So, first, the two files every run creates: its lock file locks/run-<id> (locks.TryLock → gofrs/flock opens it with O_CREAT; lock files are permanent, so locks/ also grows by one file per run forever) "+
			"and its journal output/<id>.jsonl; then the SQLite store: %s write operations per run, each a savepoint on the single writer goroutine, and modernc's database/sql driver "+
			"prepares (parses) every statement again on every call (sqlite3Prepare was about a quarter of the process's CPU in the profile behind this text: `go run . -only 1 -cpuprofile cpu.out`). "+
			"Every Launch also re-reads and re-parses every workflow file (runs.DirTargets → workflows.Load, about a third of Launch's CPU in that profile). "+
			"Fixes, in order of effect: (1) run ownership without a file per run, e.g. OFD byte-range locks (fcntl F_OFD_SETLK: per open file description, released when the process dies, like flock) "+
			"on one locks/runs file at an offset given by the run's rowid; and a journal created lazily, at the first output record or the end, for runs whose steps write nothing; "+
			"(2) prepared statements on the writer connection (prepare once per SQL text, run them with tx.StmtContext), which fires and appends share; "+
			"(3) cache parsed workflows by file name, size and modification time in runs.DirTargets, as automations.WorkflowTargets already does; "+
			"(4) a step with no external effect (skipped by `if`) folded into the settle, so a one-step noop run is 2 operations.",
			val(r, 1, "ours, FULL"), val(r, 1, "ours, NORMAL"), val(r, 1, "River, FULL"), val(r, 1, "River, NORMAL"), disk,
			val(r, 1, "diagnostic: ours, FULL, journals"), val(r, 1, "diagnostic: ours, memory store"), val(r, 1, "diagnostic: store write operations"))
	},
	3: func(r *recorder) string {
		return fmt.Sprintf("Not the transport: a ping takes %s over the same pipes, while runs.Engine.Launch alone, in process, takes %s. "+
			"One Launch re-parses every workflow file, creates and locks its lock file locks/run-<id> (a file creation), and waits for its CreateRun commit "+
			"(an fsync at FULL, p50 %s on this disk, plus re-preparing each statement on the writer). In the serve, the runs launched just before are executing meanwhile, "+
			"and their writes queue on the same single writer as the next launch's CreateRun, which is what the p99 shows. "+
			"Fixes: those of figure 1 (a run lock that creates no file, the workflow cache, prepared statements); launch_run then costs about one commit.",
			val(r, 3, "ping p50"), val(r, 3, "diagnostic: runs.Engine.Launch"), val(r, 2, "latency p50"))
	},
	4: func(r *recorder) string {
		return fmt.Sprintf("Each fire is its own store operation, at most Config.Parallel (64) in flight, and a store.Fire runs about eight statements on the single writer goroutine "+
			"(read the automation, insert the fire, prune the history, insert the run, update the state, record the operation, each statement prepared again by modernc's driver): "+
			"the lag grows linearly with the number of fires due at once, %s per fire in this run (the first fire after %s, the last after %s). "+
			"Fix: build the runs of the next due slot (literals, input) before it comes, when the timer is set, and commit every fire due at one instant in one store operation "+
			"(a FireMany: one transaction, prepared statements, multi-row inserts of fires and runs, one state update per automation), so that a minute boundary with 1,000 fires "+
			"costs one commit of a few milliseconds; prepared statements (figure 1) help every fire too.",
			val(r, 4, "diagnostic: lag added per fire"), val(r, 4, "fire lag min"), val(r, 4, "fire lag max"))
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
		return fmt.Sprintf("Adoption took %s (median; spread in the table): a peer looks for runs whose lock is free once every runs.Options.AdoptEvery (default 1 s), "+
			"so a dead owner's run waits for the peer's next pass, anywhere in 0–1 s. "+
			"Fix: a peer that sees a run running under another owner waits on that run's lock (a blocking flock in a goroutine per such run, or one goroutine per peer "+
			"that blocks on the locks of the runs it knows are running), so the kernel wakes it the instant the owner dies, and it claims the run at once.",
			val(r, 8, "SIGKILL to adopted"))
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
