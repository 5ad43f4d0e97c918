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
		return fmt.Sprintf("Our store's single writer, then per-run files. "+
			"This run: ours %s (FULL) and %s (NORMAL); River %s and %s; the disk allows %s fsyncs, so at FULL neither is near the disk's limit. "+
			"Without the two files each run creates (its lock file locks/run-<id> and its journal output/<id>.jsonl: diagnostic row) ours does %s; "+
			"with the memory store as well (the run engine alone) %s. "+
			"Profile (`go run . -only 1 -cpuprofile`): store/sqlite's writer goroutine executes every write of every run, and a noop run costs 5 write operations "+
			"(CreateRun, ClaimRun, the step's start and finish in the ledger, SettleRun), each a savepoint with a read of the run row, a full-row UPDATE and an operations insert; "+
			"modernc's driver prepares (parses) each SQL statement again on every call, about a quarter of the process's CPU (sqlite3Prepare). "+
			"Creating the two files per run costs about as much again (openat in locks.TryLock and the journal open), and every Launch re-reads and re-parses every workflow file "+
			"(runs.DirTargets → workflows.Load → loadAll, ~15%% of CPU). River is CPU-bound here too (its FULL and NORMAL figures are close): riversqlite completes jobs one row at a time. "+
			"Fixes, in order of effect: (1) prepared statements on the writer connection (prepare once per SQL text, use tx.StmtContext), which fires and appends share; "+
			"(2) fewer operations per run: create and claim in one operation when the launching engine executes the run, and a step without an external effect (skipped by `if`, a short sleep) "+
			"recorded with the next write instead of as its own start and finish, so a one-step noop run is 2 operations, not 5; "+
			"(3) cache parsed workflows by file name, size and modification time in runs.DirTargets, as automations.WorkflowTargets already does; "+
			"(4) run ownership without a file per run, e.g. OFD byte-range locks (fcntl F_OFD_SETLK, released when the process dies, like flock) on one locks/runs file at an offset given by the run's rowid; "+
			"this also stops locks/ from growing by one file per run forever.",
			val(r, 1, "ours, FULL"), val(r, 1, "ours, NORMAL"), val(r, 1, "River, FULL"), val(r, 1, "River, NORMAL"),
			val(r, 2, "write+fsync 4 KiB"),
			val(r, 1, "diagnostic: ours, FULL, journals"), val(r, 1, "diagnostic: ours, memory store"))
	},
	3: func(r *recorder) string {
		return fmt.Sprintf("Not the transport: a ping takes %s over the same pipes, while runs.Engine.Launch alone, in process, takes %s. "+
			"One Launch re-parses every workflow file (~0.2 ms), creates and locks locks/run-<id> (~0.45 ms: a file creation), and waits for its CreateRun commit (~0.6 ms at FULL: "+
			"the fsync (p50 %s on this disk) plus re-preparing each statement on the writer); meanwhile the runs launched before are executing in the same serve, and their "+
			"claim, ledger and settle writes queue on the same single writer as the next launch's CreateRun, which is what the p99 shows. "+
			"Fixes: those of figure 1 (workflow cache, prepared statements, fewer writes per run, a run lock that creates no file); launch_run then costs about one commit.",
			val(r, 3, "ping p50"), val(r, 3, "diagnostic: runs.Engine.Launch"), val(r, 2, "latency p50"))
	},
	4: func(r *recorder) string {
		return fmt.Sprintf("Fires are committed one per store operation, at most Config.Parallel (64) in flight, and each store.Fire runs about eight statements on the single writer "+
			"(read the automation, plan, insert the fire, prune history, insert the run, update the state, record the operation), each prepared again: the lag grows linearly "+
			"with the number of fires due at once (this run: the first fire after %s, the last after %s; with 1 automation due the lag is ~2 ms, with 100 ~30 ms). "+
			"Fix: build the runs (literals, input) of the next due slot before it comes, when the timer is set, and commit every fire due at one instant in one store operation "+
			"(a FireMany: one transaction with prepared statements and multi-row inserts of fires and runs), so a minute boundary with 1,000 fires costs one commit; "+
			"prepared statements (figure 1) help every fire too.",
			val(r, 4, "fire lag min"), val(r, 4, "fire lag max"))
	},
	5: func(r *recorder) string {
		return fmt.Sprintf("The append at the big session (%s) costs more than at a small one (%s): look for work proportional to the session's size in sessions.Append "+
			"(a count or max over its messages instead of the session row's counters, an index that does not start with the session id).",
			val(r, 5, "one append to the big session"), val(r, 5, "one append to a session of 10"))
	},
	6: func(r *recorder) string {
		return fmt.Sprintf("Start-up with the runs (%s) against an empty store (%s): something scans the runs table at start (adoption should use the status index, "+
			"and nothing on the path to tools/list should read settled runs).", val(r, 6, "with"), val(r, 6, "empty store"))
	},
	7: func(r *recorder) string {
		return fmt.Sprintf("Idle %s, with the automations %s: profile the heap (`go tool pprof -inuse_space`) of a serve holding the scheduler lock; "+
			"the scheduler should keep one small entry per automation (id, next due), not whole records, and the binary's own footprint is the floor.",
			val(r, 7, "RSS idle"), val(r, 7, "RSS with"))
	},
	8: func(r *recorder) string {
		return fmt.Sprintf("Adoption took %s: peers look for runs whose lock is free every AdoptEvery (runs.Options, default 1 s), so a dead owner waits up to a whole period. "+
			"Fix: a peer that sees a run running under another live owner waits on that run's lock (a blocking flock in a goroutine, or a short poll of the lock for runs it knows are running), "+
			"so the kernel wakes it the instant the owner dies, and claims the run at once.", val(r, 8, "SIGKILL to adopted"))
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
