// Package runs is the run engine: it launches workflow runs, executes them
// durably with ledger replay, parks them on questions and durable sleeps,
// cancels them, adopts runs whose process died, and writes and follows
// their output journals.
//
// # Ownership
//
// The process executing a run holds the lock locks/run-<id> (package
// locks) and the run's claim token in the store. Every peer (each mcp-host
// process with a started Engine, and `mcp-host worker`) adopts, on Start
// and then every AdoptEvery, runs that are queued or running, or waiting
// with a wake time that has come, whose lock is free; it resumes them from
// the ledger. The kernel lock decides who owns a run; the claim token
// fences the store writes of an owner that lost it.
//
// # Ledger
//
// Every step call is recorded per step path (the step id) and call
// position (the attempt, from 1): its start before its effect is
// dispatched, its result after (the simplex rule). Replay returns recorded
// results. A call that started and never finished is ambiguous: it runs
// again when the step is safe_to_repeat, otherwise the run parks with the
// question "step X may or may not have run: retry, skip or fail?". A
// durable sleep records its deadline at start, so a restart does not
// restart the wait; sleeps longer than Options.ParkSleepsOver park the run
// (status waiting) instead of holding a goroutine.
//
// # Literals
//
// At launch a run stores its literals (see Literals): the workflow file's
// name and bytes, and the validated input. Execution always parses the
// literals, never the current file, so editing a workflow does not change
// runs already launched.
//
// # Journals
//
// output/<run-id>.jsonl is the run's output journal: a first "start"
// record (run id, target, owner pid), then "text", "step", "note" and
// "question" records, and a final "end" record with the terminal status and
// the result or error. It is append-only; readers (ReadOutput, Watch) keep
// an incomplete last line until it completes, and report an owner that
// vanished without an ending.
//
// # Processes
//
// exec and shell steps run in their own process group with stdin from
// /dev/null, a working directory inside the workspace (symlinks resolved
// and checked), and an environment built from an allowlist (PATH, HOME,
// LANG, TZ) plus the step's env and CAIRN_RUN_ID, CAIRN_STEP_ID and
// CAIRN_WORKSPACE. A timeout, a cancel or an engine stop sends SIGTERM to
// the group and SIGKILL after Options.KillGrace; when the step's main
// process exits, processes it left behind in its group are killed. Output
// goes to the journal line by line; the first Options.OutputCap bytes of
// each stream are kept in the step's result.
package runs
