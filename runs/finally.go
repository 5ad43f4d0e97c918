package runs

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

// hasFinally reports whether the run's workflow has `finally:` steps,
// from what Launch parsed or else from the literals.
func hasFinally(r *store.Run, l *launchedRun) bool {
	if l != nil {
		return len(l.wf.Finally) > 0
	}
	wf, _, err := parseLiterals(r.Literals)
	return err == nil && len(wf.Finally) > 0
}

// routeCancel is an execution's cancel function: a cancel request ends
// soft (the steps) only, anything else (a stop, a lost claim) ends hard
// and so both.
func routeCancel(soft, hard context.CancelCauseFunc) context.CancelCauseFunc {
	return func(cause error) {
		if errors.Is(cause, errCancelRequested) {
			soft(cause)
			return
		}
		hard(cause)
	}
}

// replayResults fills x.results from the ledger alone: the last finished
// call of every step, for finally steps that run without the steps.
func (x *execution) replayResults() {
	for _, list := range [][]*workflows.Step{x.wf.Steps, x.wf.Finally} {
		for _, st := range list {
			var last *store.LedgerEntry
			for pos := 1; ; pos++ {
				en := x.ledger[callKey{st.ID, pos}]
				if en == nil {
					break
				}
				if en.State == store.StepFinished {
					last = en
				}
			}
			if last != nil {
				x.results[st.ID] = resultOf(last)
			}
		}
	}
}

// conclude ends the run after its steps stopped with f: the finally
// steps run when the steps succeeded, failed or were cancelled, then the
// run settles. A park, a release or a lost claim ends the execution
// without settling; the next one replays its way back here.
func (x *execution) conclude(f flow) {
	status, errText := store.RunSucceeded, ""
	switch f {
	case flowNext:
	case flowFailed:
		status, errText = store.RunFailed, x.failure
	case flowCancel:
		status, errText = store.RunCancelled, "cancelled"
	default:
		x.finishFlow(f)
		return
	}
	if len(x.wf.Finally) > 0 {
		if g := x.finally(status); g != flowNext {
			x.finishFlow(g)
			return
		}
		if status == store.RunSucceeded && x.failedStep != "" {
			status, errText = store.RunFailed, x.failure // a finally step failed
		}
	}
	var result []byte
	if status == store.RunSucceeded {
		if result, errText = x.result(); errText != "" {
			status = store.RunFailed
		}
	}
	x.settle(status, result, errText)
}

// finally runs the finally steps, each once (the ledger replays those
// done before), under x.hard: a cancel does not stop them, an engine stop
// or a lost claim does. A failing finally step does not stop the others.
func (x *execution) finally(status store.RunStatus) flow {
	x.ctx, x.status = x.hard, string(status)
	if _, done := x.ledger[callKey{x.wf.Finally[0].ID, 1}]; !done {
		x.j.add(Record{Type: RecordNote, PID: x.e.pid, Text: fmt.Sprintf("steps ended %s; running the finally steps", status)})
	}
	for _, st := range x.wf.Finally {
		if x.interrupted() {
			return x.interruption()
		}
		switch f := x.step(st); f {
		case flowNext, flowFailed:
		case flowCancel:
			// An ask or sleep cannot park a cancelled run: the step is
			// left undone and the others go on.
			x.j.add(Record{Type: RecordStep, Step: st.ID, Event: "skipped", Text: "the run is cancelled: a finally step cannot wait"})
		default:
			return f
		}
	}
	return flowNext
}
