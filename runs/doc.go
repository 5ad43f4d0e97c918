// Package runs is the run engine: it launches workflow runs, executes them
// durably with ledger replay, parks them on questions and durable sleeps,
// cancels them, adopts runs whose process died, and writes and follows
// their output journals.
//
// # Ownership
//
// The process executing a run holds the run's lock and the run's claim
// token in the store. Run locks are the keys of one lock table,
// locks/runs (locks.Table): the run id picks a byte of that file, locked
// with an open file description lock (fcntl). Like a flock lock file, it
// is released the instant the holding process dies, even by SIGKILL; but
// taking or releasing it is one system call, and runs create no file in
// locks/ (which holds the table and the few named lock files, whatever
// the number of runs). Every peer (each mcp-host process with a started
// Engine, and `mcp-host worker`) adopts, on Start and then whenever one
// may have become adoptable, runs that are queued or running, or waiting
// with a wake time that has come, whose lock is free; it resumes them
// from the ledger. A pass is one indexed query, and a lock test per
// candidate. Between passes a peer waits (peer_wait.go): on the exit of
// each process holding a run's lock, on commits to the store by any
// process (then one query for the runs that changed), and until the next
// wake time; where the store or the locker cannot tell, it polls every
// AdoptEvery (100ms by default). The kernel lock decides who owns a run; the claim token
// fences the store writes of an owner that lost it. An owner polls the
// store every CancelPoll, with one query for all the runs it executes, to
// notice a cancel requested by another process (a cancel made in the
// process reaches the execution at once).
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
// A call's outcome is written with the run's next write rather than on
// its own: a step skipped by its condition or failed before anything was
// dispatched (no external effect), and a finished call's result, ride
// with the next call's start, a park, or the settle (store.StepStart and
// store.SettleParams take them), and are written before any wait. The
// rule holds (nothing is dispatched before the start of its call is
// stored, nor before the results of the calls before it are), and a
// one-step run costs two writes (the launch, the settle), each further
// exec step one. An outcome lost with its process is that of a call with
// no effect, evaluated again, or of a call the next owner finds started
// and not finished, as after any crash.
//
// # Literals
//
// At launch a run stores its literals (see Literals): the workflow file's
// name and bytes, the validated input, and the environment captured from
// the launching process (CaptureEnv: PATH, HOME, LANG, TZ and the names in
// Options.EnvPass). Execution always parses the literals, never the
// current file, so editing a workflow does not change runs already
// launched, and every step gets the launch's environment whichever
// process executes it (a run stored before runs kept one gets the
// executing process's).
//
// # Secrets
//
// `${{ secrets.NAME }}` (env values, exec and shell arguments, http headers
// and body only: the workflow loader refuses it elsewhere) is resolved from
// Options.Secrets when the step starts, never earlier and never stored.
// From then on the execution's redactor replaces the values with "***" in
// everything the run records: journal records, the step's recorded
// stdout, stderr, body and error, the run's error and result.
//
// Every run is made one way, by Prepare (input validated, defaults
// filled, literals built), from workflows served by one cached loader
// (DirTargets, with one freshness rule: see Fingerprint): Engine.Launch
// and an automation's fire (automations.WorkflowTargets) both use them.
//
// # Journals
//
// output/<run-id>.jsonl is the run's output journal: a first "start"
// record (run id, target, owner pid), then "text", "step", "note",
// "question", "answer" and "truncated" records, and a final "end" record with the terminal status and
// the result or error. It is append-only; readers (ReadOutput, Follow) keep
// an incomplete last line until it completes, and report an owner that
// vanished without an ending. Follow is the one follow loop: Watch,
// WaitSettledOrParked and ReadOutput's wait are made of it.
//
// An execution buffers its records and writes them, with one write(2),
// before anything that takes time (starting a process, a request, a wait)
// and at its end, keeping the file open meanwhile. A run that settles
// without having written any (its steps started no process, made no
// request and did not wait) keeps its journal in the store with its
// settle (store.SettleParams.Journal) instead of creating a file: the
// same bytes, which ReadOutput, Follow and OutputSize read transparently.
// Journals are output history, not state: they are not fsynced, and the
// records an execution buffered are lost if its process dies.
//
// Journals are capped (Options.JournalRunCap, JournalLineCap; 16 MiB and
// 64 KiB by default), files and memory journals alike. A longer line is
// cut at the line cap, at a character boundary: its text ends with
// "… [line cut: N bytes dropped]" and Record.Dropped is N. Once a run's
// text reaches its head budget (the cap less the tail: a quarter of the
// cap, at most 1 MiB), text records go to a ring of the latest output in
// memory instead; the next other record (the step's "finished", a note,
// the end) is preceded by one "truncated" record (RecordTruncated:
// Dropped bytes in Lines lines left out) and the tail. Step, note,
// question and end records are always written, and the run goes on: a
// run with one noisy step stays under its cap plus those records, and
// each further step over the cap adds at most one tail. Readers hand a
// truncated record over like any other.
//
// # Processes
//
// exec and shell steps run in their own process group with stdin from
// /dev/null, a working directory inside the workspace (symlinks resolved
// and checked), and the run's environment (see Literals) plus the step's env and CAIRN_RUN_ID, CAIRN_STEP_ID and
// CAIRN_WORKSPACE. A timeout or a cancel sends SIGTERM to the group and
// SIGKILL after Options.KillGrace; when the step's main process exits,
// processes it left behind in its group are killed. Output goes to the
// journal line by line; the first Options.OutputCap bytes of each stream
// are kept in the step's result. Strings of the step spec's Redact
// (secrets) read "***" in both.
//
// # Step supervisor
//
// A step's process belongs to the run, not to the process that started
// it. Each exec or shell call runs under a step supervisor: the binary
// re-executed (os.Executable) in a hidden mode that init checks, in its
// own session, told what to run on a pipe (never in argv or environment).
// It takes the step's lock (key "step:<run-id>" of locks/runs), kills
// what an earlier attempt whose supervisor died left in its process
// group, records itself in the step file output/<run-id>.step (pid and
// start time: anyone can signal it), starts the command with a
// parent-death signal (Linux), writes its output to the journal and its
// result to the step file (atomically, fsynced), and exits. SIGTERM to
// the supervisor is how a cancel, from any process, stops the command,
// even when the run's owner is stuck. The owner only watches (a pipe
// from its supervisor). When the owner dies or stops, the step goes on;
// the peer that adopts the run re-attaches: it waits while the step's
// lock is held and takes the recorded result. A call is ambiguous (run
// again if safe_to_repeat, else the question) only when its supervisor
// is gone without a result after it started the command; one that never
// reached its command runs again. In-memory engines (dry runs) run steps
// in their own process: nothing of theirs outlives it.
//
// # Time
//
// The engine reads the time and makes its timers (the peer loop, the
// cancel watch, step timeouts, sleeps, follow polls, Stop's grace) from
// Options.Clock, so tests move a clock.Fake instead of waiting; its store
// writes carry that clock's time too (the params' Now, a new run's
// CreatedAt). Only the
// workflow loader's racy-file rule reads the wall clock, as the file
// system stamps files with it.
//
// # Files
//
// engine.go (options, New, Launch, Stop), query.go (Get, List, Busy),
// answer.go, cancel.go, peer.go (the adoption loop), supervise.go (an
// execution's start, and the owner's cancel and claim watch), locker.go
// (run locks), execute.go (the run loop), ledger.go (call records),
// step_*.go and http.go (the step kinds), journal.go (records and their
// writer), journal_caps.go (the caps: the tail, cut lines), journals.go
// (files or memory), output.go (ReadOutput),
// follow.go, targets.go (the loader), prepare.go, literals.go, view.go,
// process.go (process groups), env.go (the run's environment), secrets.go
// and redact.go (secrets and their redaction), stall.go (why a run waits
// on nobody), stepsup_*.go (the step supervisor: main,
// spawn and watch, attach, the step file, processes, its lease),
// coordination.go and locker_lease.go (leases mode, for several machines:
// runs and steps held by store leases instead of lock files).
package runs
