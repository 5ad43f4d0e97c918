package runs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/cairnhq/cairn/workflows"
)

// supervisor is a step supervisor this process started.
type supervisor struct {
	cmd    *exec.Cmd
	ref    procRef
	locked chan struct{} // closed when it holds the step's lock
	done   chan struct{} // closed once it exited and was reaped
	// failure is the error it reported, if any; read after done.
	failure string
	log     *slog.Logger // where its waiting lines go (nil: nowhere)
}

// startSupervisor starts a step supervisor for spec and hands it the spec
// on a pipe. It returns once the supervisor holds the step's lock and was
// told to go.
func (x *execution) startSupervisor(spec stepSpec) (*supervisor, error) {
	exe, err := supervisorExe()
	if err != nil {
		return nil, fmt.Errorf("start step supervisor: find the executable: %w", err)
	}
	body, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("start step supervisor: encode spec: %w", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start step supervisor: %w", err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("start step supervisor: %w", err)
	}
	// A race-enabled test binary stands in for mcp-host: its race
	// detector would sleep a second at exit by default, and the owner
	// waits for the supervisor's exit (GORACE means nothing to others).
	mode := supervisorMode
	if spec.Lease != nil {
		mode = supervisorStoreMode(spec.Lease.Store.Kind) // entered in RegisterStoreOpener
	}
	env := []string{supervisorEnv + "=" + mode,
		"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")}
	name, err := os.Executable() // what ps shows
	if err != nil {
		name = exe
	}
	cmd := &exec.Cmd{
		Path:       exe,
		Args:       []string{name},
		Env:        env,
		Dir:        "/",
		Stdin:      inR,
		ExtraFiles: []*os.File{statusW}, // fd 3: the status pipe
		// Its own session: no terminal signal, no process group of ours
		// reaches it; it outlives this process.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	inR.Close()
	statusW.Close()
	if err != nil {
		inW.Close()
		statusR.Close()
		return nil, fmt.Errorf("start step supervisor: %w", err)
	}
	s := &supervisor{cmd: cmd, ref: refOf(cmd.Process.Pid), locked: make(chan struct{}), done: make(chan struct{}), log: x.e.log.With("run", x.id)}
	go s.read(statusR)
	_, werr := inW.Write(append(body, '\n'))
	if werr == nil {
		select {
		case <-s.locked:
			_, werr = inW.Write([]byte(goLine + "\n"))
		case <-s.done:
			werr = errors.New("it exited")
		case <-x.ctx.Done():
			werr = errNotStarted
		}
	}
	inW.Close()
	if werr != nil {
		_ = cmd.Process.Kill() // nothing started: it had not been told to go
		<-s.done
		if werr == errNotStarted {
			return nil, werr
		}
		return nil, fmt.Errorf("start step supervisor: %v%s", werr, s.reason())
	}
	return s, nil
}

// errNotStarted: the execution was interrupted before its supervisor was
// told to go: the command never started.
var errNotStarted = errors.New("interrupted before the step's command started")

// read follows the status pipe until the supervisor exits, then reaps it.
func (s *supervisor) read(r *os.File) {
	defer close(s.done)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == statusLocked:
			close(s.locked)
		case strings.HasPrefix(line, "error: "):
			s.failure = strings.TrimPrefix(line, "error: ")
		case strings.HasPrefix(line, statusWaiting) && s.log != nil:
			s.log.Warn("step supervisor waits for the state disk", "pid", s.ref.PID, "say", strings.TrimPrefix(line, statusWaiting))
		}
	}
	r.Close()
	_ = s.cmd.Wait()
}

func (s *supervisor) reason() string {
	if s.failure == "" {
		return ""
	}
	return ": " + s.failure
}

// superviseStep runs spec under a step supervisor and watches it. gone
// says the supervisor ended without a result: whether the command ran is
// unknown (its process group is gone).
func (x *execution) superviseStep(st *workflows.Step, pos, starts int, spec procSpec) (res procResult, gone bool) {
	x.j.flush() // the supervisor's records come after ours
	x.j.sync()
	ss := x.stepSpec(st, pos, spec)
	ss.Starts = starts
	ss.Journals = x.e.opts.JournalDatabase
	s, err := x.startSupervisor(ss)
	if errors.Is(err, errNotStarted) {
		res.Interrupted = context.Cause(x.ctx)
		return res, false
	}
	if err != nil {
		res.Err = err
		return res, false
	}
	select {
	case <-s.done:
		return x.supervisedResult(st, pos, starts, s)
	case <-x.ctx.Done():
	}
	if errors.Is(context.Cause(x.ctx), errCancelRequested) {
		_ = s.cmd.Process.Signal(syscall.SIGTERM) // it stops the command and records it
		<-s.done
		return x.supervisedResult(st, pos, starts, s)
	}
	// The engine stops or the run was taken over: the step goes on under
	// its supervisor, and whoever owns the run next takes its result (the
	// reaping goroutine ends with the supervisor).
	res.PID, res.Interrupted, res.detached = s.ref.PID, context.Cause(x.ctx), true
	return res, false
}

// supervisedResult reads the result the supervisor s recorded.
func (x *execution) supervisedResult(st *workflows.Step, pos, starts int, s *supervisor) (procResult, bool) {
	state, err := x.readStep()
	if err != nil || !state.isStart(st.ID, pos, starts) || state.Result == nil {
		x.j.add(Record{Type: RecordNote, Step: st.ID, Text: fmt.Sprintf("step supervisor pid %d ended without a result%s", s.ref.PID, s.reason())})
		if state.isStart(st.ID, pos, starts) && state.onThisMachine() {
			if err := stopGroupOf(state.Command, groupStopWait); err != nil {
				x.j.add(Record{Type: RecordNote, Step: st.ID, Text: err.Error()})
			}
		}
		return procResult{PID: s.ref.PID}, true
	}
	return x.takeResult(state.Result), false
}

// takeResult turns a recorded result into the call's outcome; a command
// its supervisor stopped was cancelled when the run has a cancel request.
func (x *execution) takeResult(r *stepResult) procResult {
	res := r.process()
	if r.Stopped {
		if x.cancelRequested() {
			x.cancel(errCancelRequested) // the execution settles cancelled
			res.Interrupted = errCancelRequested
		} else if res.Err == nil {
			res.Err = errors.New("stopped by a signal to its step supervisor")
		}
	}
	return res
}

// cancelRequested reports whether the run has a cancel request (in this
// process or in the store).
func (x *execution) cancelRequested() bool {
	if errors.Is(context.Cause(x.ctx), errCancelRequested) {
		return true
	}
	cs, err := x.e.st.RunClaims(x.sctx(), []string{x.id})
	return err == nil && len(cs) == 1 && cs[0].CancelRequested
}

func (x *execution) stepFile() string { return stepFilePath(x.e.ws.OutputDir(), x.id) }

// stepSpec is what the supervisor of call pos of st runs.
func (x *execution) stepSpec(st *workflows.Step, pos int, p procSpec) stepSpec {
	return stepSpec{
		RunID: x.id, Step: st.ID, Attempt: pos,
		Argv: p.argv, Dir: p.dir, Env: p.env, Timeout: p.timeout, Grace: p.grace,
		OutputCap: p.cap, LineCap: p.lineCap, JournalRunCap: x.e.opts.JournalRunCap,
		OutputDir: x.e.ws.OutputDir(), LocksDir: x.e.ws.LocksDir(), Redact: p.Redact,
		OutputFile: st.Output == workflows.OutputFile, Lease: x.e.stepLeaseSpec(),
	}
}
