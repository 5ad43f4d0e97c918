package runs

import (
	"fmt"

	"github.com/cairnhq/cairn/workflows"
)

// dispatch runs an exec, shell or http call: it renders the step, records
// the start, dispatches, and records the outcome.
func (x *execution) dispatch(st *workflows.Step, pos int) flow {
	if x.interrupted() {
		return x.interruption() // nothing dispatched yet: nothing ambiguous
	}
	if err := x.resolveSecrets(st); err != nil {
		return x.failStep(st, pos, err.Error())
	}
	defer x.clearSecrets()
	switch st.Kind {
	case workflows.KindExec, workflows.KindShell:
		return x.processStep(st, pos)
	case workflows.KindHTTP:
		return x.httpStep(st, pos)
	}
	return x.failStep(st, pos, fmt.Sprintf("unknown step kind %q", st.Kind))
}

// cutShort handles a call cut short by the execution's context: a
// cancel is recorded as the call's outcome; a stop or a lost claim leaves
// the call started (its effect is unknown) for the next owner.
func (x *execution) cutShort(st *workflows.Step, pos int, rec stepRecord) flow {
	f := x.interruption()
	if f != flowCancel {
		x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "interrupted", PID: rec.PID, Text: "stopped before it finished"})
		return f
	}
	x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "finished", Status: StepCancelled, PID: rec.PID})
	if g := x.finish(st, pos, StepCancelled, rec, "cancelled"); g != flowNext {
		return g
	}
	x.results[st.ID] = resultOf(x.ledger[callKey{st.ID, pos}]) // for the finally steps
	return flowCancel
}
