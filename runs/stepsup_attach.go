package runs

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

// groupStopWait bounds how long killing what is left of an earlier
// attempt's process group may take.
const groupStopWait = 10 * time.Second

// attached is what attachStep found of a call an earlier owner started.
type attached int

const (
	attachTaken     attached = iota // its result (res)
	attachGone                      // its supervisor ended without a result: it may or may not have run
	attachUnstarted                 // it never reached its command
)

// attachStep re-attaches to call pos of st, which an earlier owner
// started (for the starts-th time) and did not finish: while its
// supervisor lives, it waits for its result (the supervisor writes the
// step's output to the journal meanwhile); a result recorded while nobody
// owned the run is taken as is. When the supervisor is gone without a
// result, no process of the call is left (what was left is killed), and
// the caller decides whether to run it again. f is not flowNext when the
// execution must stop first.
func (x *execution) attachStep(st *workflows.Step, pos, starts int) (res procResult, found attached, f flow) {
	noted, signalled := false, false
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		state, _ := x.readStep() // unreadable: see checkGone
		if state.isStart(st.ID, pos, starts) && state.Result != nil {
			return x.tookResult(st, state), attachTaken, flowNext
		}
		held, err := x.e.locker.isHeld(stepKey(x.id))
		if err != nil {
			return res, attachGone, x.storeFailed("test step lock", err)
		}
		if !held {
			res, found, err := x.checkGone(st, pos, starts)
			if err == nil {
				return res, found, flowNext
			}
			if !errors.Is(err, locks.ErrHeld) {
				x.j.add(Record{Type: RecordNote, PID: x.e.pid, Step: st.ID, Text: fmt.Sprintf("%v; pid %d lets go of the run", err, x.e.pid)})
				return res, attachGone, flowRelease
			}
			continue // a supervisor took the lock just now
		}
		if !noted && state.is(st.ID, pos) {
			noted = true
			x.j.write(Record{Type: RecordNote, PID: x.e.pid, Step: st.ID, Text: fmt.Sprintf("pid %d re-attached to step %s, which goes on under its supervisor pid %d", x.e.pid, st.ID, state.Supervisor.PID)})
		}
		if x.interrupted() {
			if x.interruption() != flowCancel {
				return res, attachGone, x.interruption()
			}
			if !signalled && state.is(st.ID, pos) {
				signalled = true
				_ = signalProcess(state.Supervisor, syscall.SIGTERM)
			}
		}
		time.Sleep(delay) // another process's supervisor: nothing to wait on but time
	}
}

// checkGone decides, holding the step's lock (so no supervisor is in the
// middle of the call), whether call pos of st has a result after all or
// is gone; what is left of its process group is killed first. The error
// wraps locks.ErrHeld when a supervisor holds the lock.
func (x *execution) checkGone(st *workflows.Step, pos, starts int) (procResult, attached, error) {
	lock, err := x.e.locker.tryLock(stepKey(x.id))
	if err != nil {
		return procResult{}, attachGone, err
	}
	defer lock.Unlock()
	state, err := x.readStep()
	if errors.Is(err, errStepStore) {
		return procResult{}, attachGone, err // the store decides nothing: let go of the run
	}
	if err != nil {
		// Whether it reached its command is unknown (a crash of the
		// machine can leave the file torn): ambiguous.
		x.j.add(Record{Type: RecordNote, PID: x.e.pid, Step: st.ID, Text: err.Error()})
		return procResult{}, attachGone, nil
	}
	switch {
	case !state.isStart(st.ID, pos, starts):
		return procResult{}, attachUnstarted, nil
	case state.Result != nil:
		return x.tookResult(st, state), attachTaken, nil
	}
	if !state.onThisMachine() {
		// A supervisor there that lives on cut off from the store kills
		// its command within a look at its lease once the lease lapsed
		// (stepsup_lease.go): give it that long, holding the lease.
		wait := stepLeaseWatchEvery(x.e.opts.Leases.Renew) + time.Second
		x.j.add(Record{Type: RecordNote, PID: x.e.pid, Step: st.ID, Text: fmt.Sprintf("step %s's supervisor ran on another machine: what is left of its command there cannot be stopped from here; waiting %s, for it to stop its command if it lives on, before the call counts as gone", st.ID, wait)})
		if !x.wait(wait) {
			return procResult{}, attachGone, fmt.Errorf("interrupted while waiting for step %s's supervisor on another machine", st.ID)
		}
	} else if err := stopGroupOf(state.Command, groupStopWait); err != nil {
		return procResult{}, attachGone, err
	}
	x.j.add(Record{Type: RecordNote, PID: x.e.pid, Step: st.ID, Text: fmt.Sprintf("step %s's supervisor pid %d is gone without a result", st.ID, state.Supervisor.PID)})
	return procResult{}, attachGone, nil
}

// unstartedForSure reports whether a call the step file does not name
// never reached its command: it was started under a supervisor, which
// records the call before it starts the command, in this boot (that
// record is not synced: a crash of the machine may lose it).
func unstartedForSure(en *store.LedgerEntry) bool {
	d := decodeDetail(en.Detail)
	return d.Supervised && d.Boot != "" && d.Boot == locks.BootID()
}

// tookResult notes and returns the result a supervisor recorded.
func (x *execution) tookResult(st *workflows.Step, state *stepState) procResult {
	x.j.add(Record{Type: RecordNote, PID: x.e.pid, Step: st.ID, Text: fmt.Sprintf("took the result step %s's supervisor recorded (pid %d)", st.ID, state.Supervisor.PID)})
	return x.takeResult(state.Result)
}

// signalStepSupervisor tells the supervisor of run id's step in flight,
// whichever process started it, to stop its command: a cancel reaches
// the step even when the run's owner is stuck.
func (e *Engine) signalStepSupervisor(id string) {
	if e.opts.InMemory || e.opts.leases() {
		return // leases: the supervisor may be another machine's; it reads the cancel in the store
	}
	state, err := readStepState(stepFilePath(e.ws.OutputDir(), id))
	if err != nil || state == nil || state.Result != nil {
		return
	}
	_ = signalProcess(state.Supervisor, syscall.SIGTERM)
}
