package runs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/locks"
)

// supervisorEnv set to supervisorMode makes a binary that links this
// package a step supervisor instead of what it is (see init).
const (
	supervisorEnv  = "CAIRN_STEP_SUPERVISOR"
	supervisorMode = "1"
)

// Messages a supervisor writes on its status pipe (fd 3) to the process
// that started it.
const (
	statusLocked = "locked" // it holds the step's lock: tell it "go"
	statusDone   = "done"   // the result is in the step file
	goLine       = "go"
)

// The hidden mode is checked here, before main and before any other
// package's init past this one, so that every binary that links the run
// engine, mcp-host and the test binaries alike, can be its own step
// supervisor: the engine re-executes os.Executable(), whatever it is,
// and no binary can start supervisors it cannot be. It is not a command
// or flag: nothing lists it.
func init() {
	if os.Getenv(supervisorEnv) == supervisorMode {
		os.Exit(superviseMain(os.Stdin, os.NewFile(3, "status")))
	}
}

// superviseMain is a step supervisor: it reads its stepSpec from in,
// takes the step's lock, says statusLocked on status and waits for "go"
// (a starter that died before saying it leaves nothing running), then runs
// the command, writing its output into the run's journal and its result
// into the step file, and says statusDone. SIGTERM stops the command
// (SIGTERM to its group, SIGKILL after the grace): that is how a cancel,
// from any process, reaches a step.
func superviseMain(in io.Reader, status *os.File) int {
	// A parent-death signal fires when the thread that started the
	// command ends: keep this goroutine on the main thread.
	runtime.LockOSThread()
	if status == nil {
		return 2
	}
	syscall.CloseOnExec(int(status.Fd())) // not the command's
	// From the start: a cancel that comes before the command starts
	// means it never starts.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	// A leases-mode lock stops the command too: a cancel it reads in the
	// store, or its lease lost.
	ctx, interrupt := context.WithCancelCause(ctx)
	defer interrupt(nil)
	r := bufio.NewReaderSize(in, 64<<10)
	var spec stepSpec
	line, err := readLine(r, maxSpecLine)
	if err == nil {
		err = json.Unmarshal(line, &spec)
	}
	if err == nil {
		err = spec.check()
	}
	if err != nil {
		fmt.Fprintf(status, "error: read step spec: %v\n", err)
		return 2
	}
	lock, err := lockStep(ctx, spec, interrupt)
	if err != nil {
		fmt.Fprintf(status, "error: %v\n", err)
		return 2
	}
	defer lock.Unlock()
	path := stepFilePath(spec.OutputDir, spec.RunID)
	rec := newStepRecorder(spec, lock)
	// An earlier attempt whose supervisor died may have left processes
	// in its group: none may run beside this one.
	if prev, err := readStepState(path); err == nil && prev != nil && prev.Result == nil {
		if err := stopGroupOf(prev.Command, 30*time.Second); err != nil {
			fmt.Fprintf(status, "error: %v\n", err)
			return 2
		}
	}
	if _, err := fmt.Fprintln(status, statusLocked); err != nil {
		return 0
	}
	if l, err := readLine(r, 16); err != nil || string(l) != goLine {
		return 0 // the starter is gone: nothing was started
	}
	// Recorded before the command starts (see unstartedForSure); not
	// synced: within a boot every process sees it, and after a crash of
	// the machine the call counts as ambiguous.
	st := &stepState{Step: spec.Step, Attempt: spec.Attempt, Starts: spec.Starts, Supervisor: refOf(os.Getpid())}
	if err := rec.write(st, false); err != nil {
		fmt.Fprintf(status, "error: %v\n", err)
		return 2
	}
	e := supervisorEngine(spec)
	red := newRedactor(spec.Redact)
	j := e.openJournal(spec.RunID)
	j.redact = red
	ps := spec.procSpec()
	ps.onStart = func(pid int) {
		st.Command = refOf(pid)
		if err := rec.write(st, false); err != nil {
			j.add(Record{Type: RecordNote, Step: spec.Step, Text: fmt.Sprintf("step supervisor pid %d: %v", os.Getpid(), err)})
		}
		j.write(Record{Type: RecordStep, Step: spec.Step, Attempt: spec.Attempt, Event: "started", PID: pid})
	}
	ps.onLine = func(stream, line string, dropped int64) {
		if dropped > 0 {
			line += cutMarker(dropped)
		}
		j.write(Record{Type: RecordText, Step: spec.Step, Stream: stream, Text: line, Dropped: dropped})
	}
	var outFile *outputFile // output: file (output_file.go)
	if spec.OutputFile {
		if outFile = startOutputFile(j.write, spec.Step, spec.Attempt, outputFilePath(spec.OutputDir, spec.RunID, spec.Step, spec.Attempt)); outFile != nil {
			ps = outFile.wrap(ps)
		}
	}
	var res procResult
	if ctx.Err() != nil {
		res.Interrupted = context.Cause(ctx) // told to stop before it started
	} else {
		res = runProcess(ctx, ps)
	}
	outFile.close()
	j.close()
	if cause := context.Cause(ctx); errors.Is(cause, errStepLeaseLost) {
		// Another supervisor may run the step now: no result of ours
		// may be taken for its.
		fmt.Fprintf(status, "error: %v\n", cause)
		return 2
	}
	st.Result = resultOfProcess(res, red)
	if err := recordResult(status, lock, rec, st); err != nil {
		fmt.Fprintf(status, "error: record the result: %v\n", err)
		return 2
	}
	fmt.Fprintln(status, statusDone)
	return 0
}

// maxSpecLine bounds a step spec.
const maxSpecLine = 64 << 20

// readLine reads one line, without its newline, of at most max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			return nil, fmt.Errorf("line longer than %d bytes", max)
		}
		if err == nil {
			return line[:len(line)-1], nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

func (s *stepSpec) check() error {
	if err := ids.Validate("run id", s.RunID); err != nil {
		return err
	}
	if err := ids.Validate("step id", s.Step); err != nil {
		return err
	}
	if len(s.Argv) == 0 || s.OutputDir == "" || s.LocksDir == "" || s.Attempt < 1 {
		return errors.New("incomplete step spec")
	}
	return nil
}

// lockStep takes the step's lock (its lease in leases mode), waiting
// while another supervisor of the run holds it (one that was started and
// not told "go" exits as soon as it notices its starter is gone).
func lockStep(ctx context.Context, spec stepSpec, interrupt context.CancelCauseFunc) (stepLock, error) {
	if spec.Lease != nil {
		return lockStepLease(ctx, spec, interrupt)
	}
	t, err := locks.OpenTable(spec.LocksDir, runTable)
	if err != nil {
		return nil, fmt.Errorf("lock step %s: %w", spec.Step, err)
	}
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		l, err := t.TryLock(stepKey(spec.RunID))
		if err == nil {
			return tableStepLock{l}, nil
		}
		if !errors.Is(err, locks.ErrHeld) {
			return nil, err
		}
		time.Sleep(delay) // held by another process: nothing to wait on but time
	}
}

// procSpec is the process the supervisor runs.
func (s *stepSpec) procSpec() procSpec {
	return procSpec{argv: s.Argv, dir: s.Dir, env: s.Env, timeout: s.Timeout, grace: s.Grace,
		cap: s.OutputCap, lineCap: s.LineCap, Redact: s.Redact, dieWithParent: true}
}

// supervisorEngine is the part of an engine a supervisor's journal writer
// uses: the run's journal file and its caps.
func supervisorEngine(s stepSpec) *Engine {
	return &Engine{
		opts:     Options{JournalRunCap: s.JournalRunCap, JournalLineCap: s.LineCap},
		clk:      clock.Real{},
		log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		journals: supervisorJournals(s),
		notify:   make(chan struct{}),
		pid:      os.Getpid(),
	}
}
