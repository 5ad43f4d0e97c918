package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cairnhq/cairn/internal/atomicfile"
)

// A step's process runs under a step supervisor (see stepsup_main.go):
// the binary re-executed in a hidden mode, in its own session, which
// starts the command, writes its output into the journal, holds the
// step's lock (key stepKey(run) in the run lock table) and records what
// became of the command in the run's step file, output/<run-id>.step.
//
// The step file, not the ledger, is where the supervisor records the exit
// status: the supervisor holds no claim on the run (its owner, or the
// peer that adopts the run, moves the result into the ledger, fenced by
// its claim), opens no database (no writer connection to compete for, no
// commit with an unknown outcome to resolve in a process that should only
// wait for a command), and an atomic file write is durable on its own
// (internal/atomicfile: temporary file, fsync, rename, fsync of the
// folder). A run executes one step at a time, so one file per run holds
// the latest supervised call; it is removed when the run settles.

// stepSpec is what a supervisor is told to run, sent on its standard
// input (never in argv or in its environment, which others can read).
type stepSpec struct {
	// Journals, when set, is where the run's journal is kept: the
	// supervisor appends to the database, not to a local file.
	Journals *JournalDatabase `json:"journals,omitempty"`

	RunID         string        `json:"run_id"`
	Step          string        `json:"step"`
	Attempt       int           `json:"attempt"`
	Starts        int           `json:"starts"` // the ledger's count of the call's starts
	Argv          []string      `json:"argv"`
	Dir           string        `json:"dir"`
	Env           []string      `json:"env"`
	Timeout       time.Duration `json:"timeout,omitempty"`
	Grace         time.Duration `json:"grace"`
	OutputCap     int           `json:"output_cap"`
	LineCap       int           `json:"line_cap"`
	JournalRunCap int64         `json:"journal_run_cap"`
	OutputDir     string        `json:"output_dir"`
	LocksDir      string        `json:"locks_dir"`
	// Redact are strings (secrets) replaced by "***" in every line of
	// output written to the journal and in the output kept in the result.
	Redact []string `json:"redact,omitempty"`
	// OutputFile: the step says `output: file`; the supervisor writes the
	// lines to the call's output file (outputFilePath) instead of the
	// journal, and the journal's output_file records.
	OutputFile bool `json:"output_file,omitempty"`
	// Lease, in leases mode, makes the supervisor hold the step's lease
	// in the store instead of the lock table's key (stepsup_lease.go).
	Lease *stepLeaseSpec `json:"lease,omitempty"`
}

// stepState is the step file: the supervised call, who runs it and, once
// the command ended, its result.
type stepState struct {
	Step       string      `json:"step"`
	Attempt    int         `json:"attempt"`
	Starts     int         `json:"starts"`
	Supervisor procRef     `json:"supervisor"`
	Command    procRef     `json:"command,omitzero"` // its process group has the same id
	Result     *stepResult `json:"result,omitempty"`
	// Boot is the supervisor's machine's boot id: its pids name processes
	// of that boot only (a step state in a shared store, stepsup_shared.go).
	Boot string `json:"boot,omitempty"`
}

// is reports whether s is about call pos of step.
func (s *stepState) is(step string, pos int) bool {
	return s != nil && s.Step == step && s.Attempt == pos
}

// isStart reports whether s is about the starts-th start of call pos of
// step: a supervisor writes it before it starts the command, so a call
// whose start is not in the step file never reached its command.
func (s *stepState) isStart(step string, pos, starts int) bool {
	return s.is(step, pos) && s.Starts == starts
}

// procRef names a process: its pid and its start time (clock ticks after
// boot), which tells it from a later process that reused the pid.
type procRef struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start,omitempty"`
}

// stepResult is what became of a supervised command: what the ledger
// keeps of it, and what the supervisor saw.
type stepResult struct {
	stepRecord
	TimedOut bool `json:"timed_out,omitempty"`
	// Stopped: the supervisor was told to stop the command (a cancel).
	Stopped bool   `json:"stopped,omitempty"`
	Err     string `json:"error,omitempty"`
}

// resultOfProcess is what the step file keeps of res, its output and
// error text redacted by red: the step file holds no secret.
func resultOfProcess(res procResult, red *redactor) *stepResult {
	r := &stepResult{stepRecord: red.stepRecord(res.record()), TimedOut: res.TimedOut, Stopped: res.Interrupted != nil}
	if res.Err != nil {
		r.Err = red.str(res.Err.Error())
	}
	return r
}

func (r *stepResult) process() procResult {
	res := procResult{PID: r.PID, ExitCode: r.ExitCode, Stdout: r.Stdout, Stderr: r.Stderr,
		StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated, TimedOut: r.TimedOut}
	if r.Err != "" {
		res.Err = errors.New(r.Err)
	}
	return res
}

// stepKey is the lock table key a run's step supervisor holds.
func stepKey(runID string) string { return "step:" + runID }

// stepFileExt ends a step file's name: output/<run-id>.step.
const stepFileExt = ".step"

func stepFilePath(outputDir, runID string) string {
	return filepath.Join(outputDir, runID+stepFileExt)
}

// maxStepFile bounds what readStepState reads: two streams' kept output,
// escaped, and the rest.
const maxStepFile = 64 << 20

// readStepState reads a step file; nil when there is none.
func readStepState(path string) (*stepState, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read step file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStepFile))
	if err != nil {
		return nil, fmt.Errorf("read step file %s: %w", path, err)
	}
	var s stepState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("read step file %s: %w", path, err)
	}
	return &s, nil
}

// writeStepState replaces the step file with s: durably (fsynced) when
// a crash of the machine must not lose it (the result), else only
// atomically (what matters only while the machine runs).
func writeStepState(path string, s *stepState, durable bool) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode step file: %w", err)
	}
	if durable {
		return atomicfile.WriteFile(path, b, 0o600)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write step file: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write step file %s: %w", path, err)
	}
	return nil
}

// removeStepFile deletes run id's step file, once the run settled (its
// last call's outcome is in the ledger).
func (e *Engine) removeStepFile(id string) {
	if e.opts.InMemory {
		return
	}
	if err := os.Remove(stepFilePath(e.ws.OutputDir(), id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		e.log.Warn("remove step file", "run", id, "err", err)
	}
	e.removeStepState(id)
}
