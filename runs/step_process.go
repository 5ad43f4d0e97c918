package runs

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/workflows"
)

// processStep runs an exec or shell call as a process group.
func (x *execution) processStep(st *workflows.Step, pos int) flow {
	spec, err := x.processSpec(st)
	if err != nil {
		return x.failStep(st, pos, err.Error())
	}
	var detail *stepDetail
	if x.supervised(st) {
		detail = &stepDetail{Supervised: true, Boot: locks.BootID()}
	}
	en, err := x.start(st, pos, detail)
	if err != nil {
		return x.storeFailed("record step start", err)
	}
	if detail != nil {
		res, gone := x.superviseStep(st, pos, en.Starts, spec)
		if gone {
			return x.call(st, pos, x.ledger[callKey{st.ID, pos}])
		}
		return x.processOutcome(st, pos, res)
	}
	// In memory (a dry run, tests): nothing of the run outlives this
	// process, so its steps run here.
	spec.onStart = func(pid int) {
		x.j.write(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "started", PID: pid})
	}
	spec.onLine = func(stream, line string, dropped int64) {
		if dropped > 0 {
			line += cutMarker(dropped)
		}
		x.j.write(Record{Type: RecordText, Step: st.ID, Stream: stream, Text: line, Dropped: dropped})
	}
	spec, outFile := x.withOutputFile(st, pos, spec) // output: file (output_file.go)
	res := runProcess(x.ctx, spec)
	outFile.close()
	return x.processOutcome(st, pos, res)
}

// record is what the ledger keeps of a process.
func (res procResult) record() stepRecord {
	return stepRecord{PID: res.PID, ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr, StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated}
}

// supervised reports whether st's calls run under a step supervisor.
func (x *execution) supervised(st *workflows.Step) bool {
	return !x.e.opts.InMemory && (st.Kind == workflows.KindExec || st.Kind == workflows.KindShell)
}

// processOutcome records what became of an exec or shell call.
func (x *execution) processOutcome(st *workflows.Step, pos int, res procResult) flow {
	rec := res.record()
	if res.detached {
		x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "detached", PID: res.PID,
			Text: fmt.Sprintf("pid %d lets go of the step, which goes on under its supervisor pid %d; the run's next owner takes its result", x.e.pid, res.PID)})
		return x.interruption()
	}
	if res.Interrupted != nil {
		return x.cutShort(st, pos, rec)
	}
	status, errText := StepSucceeded, ""
	switch {
	case res.TimedOut:
		status, errText = StepFailed, fmt.Sprintf("timed out after %s", st.Timeout)
	case res.Err != nil:
		status, errText = StepFailed, res.Err.Error()
	case res.ExitCode != nil && *res.ExitCode != 0:
		status, errText = StepFailed, fmt.Sprintf("exit status %d", *res.ExitCode)
	}
	x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "finished", Status: status, ExitCode: res.ExitCode, PID: res.PID, Error: errText})
	return x.finish(st, pos, status, rec, errText)
}

// processSpec renders an exec or shell step into a process to run.
func (x *execution) processSpec(st *workflows.Step) (procSpec, error) {
	env := x.env()
	var argv []string
	if st.Kind == workflows.KindShell {
		script, err := st.Shell.Render(env)
		if err != nil {
			return procSpec{}, fmt.Errorf("shell: %w", err)
		}
		argv = []string{"sh", "-c", script}
	} else {
		for i, t := range st.Exec {
			a, err := t.Render(env)
			if err != nil {
				return procSpec{}, fmt.Errorf("exec[%d]: %w", i, err)
			}
			if strings.ContainsRune(a, 0) {
				return procSpec{}, fmt.Errorf("exec[%d]: contains a NUL byte", i)
			}
			argv = append(argv, a)
		}
	}
	if len(argv) == 0 || argv[0] == "" {
		return procSpec{}, errors.New("exec: empty program name")
	}
	vars := map[string]string{
		"CAIRN_RUN_ID":    x.id,
		"CAIRN_STEP_ID":   st.ID,
		"CAIRN_WORKSPACE": x.e.ws.Root,
	}
	for k, t := range st.Env {
		v, err := t.Render(env)
		if err != nil {
			return procSpec{}, fmt.Errorf("env %s: %w", k, err)
		}
		if strings.ContainsRune(v, 0) {
			return procSpec{}, fmt.Errorf("env %s: contains a NUL byte", k)
		}
		vars[k] = v
	}
	rel, err := st.RenderDir(env)
	if err != nil {
		return procSpec{}, err
	}
	dir, err := workDir(x.e.ws.Root, rel)
	if err != nil {
		return procSpec{}, err
	}
	return procSpec{
		argv:    argv,
		dir:     dir,
		env:     x.stepEnv(vars),
		timeout: st.Timeout,
		grace:   x.e.opts.KillGrace,
		clk:     x.e.clk,
		cap:     x.e.opts.OutputCap,
		lineCap: x.e.opts.JournalLineCap,
		Redact:  x.redactValues(), // the step's secrets, for its supervisor
	}, nil
}
