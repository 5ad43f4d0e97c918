package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

// Answers to the question about an ambiguous step.
const (
	AnswerRetry = "retry"
	AnswerSkip  = "skip"
	AnswerFail  = "fail"
)

// execution is one process's turn at executing a run: from its claim to
// its settling, parking or release.
type execution struct {
	e      *Engine
	id     string
	lock   unlocker
	ctx    context.Context // ends on cancel request, engine stop, or loss of the claim
	cancel context.CancelCauseFunc
	// hard ends on engine stop or loss of the claim only: `finally:` steps
	// run under it, so a cancel does not cut them short.
	hard context.Context
	// claimed is the run as Launch stored it, already claimed by us, and
	// launched what Launch parsed (the same bytes as its literals).
	claimed  *store.Run
	launched *launchedRun
	// claim is the claim token (set before the execution starts), and
	// owned says it is stored: the run is ours to watch.
	claim string
	owned atomic.Bool

	run     *store.Run
	wf      *workflows.Workflow
	input   map[string]any
	ledger  map[callKey]*store.LedgerEntry
	results map[string]workflows.StepResult
	j       *journalWriter
	// launchEnv is the environment the run captured at launch (nil for a
	// run stored before runs kept one: see runEnv).
	launchEnv map[string]string
	// redact replaces the secret values resolved so far in what the run
	// records.
	redact *redactor
	// secrets are the current step's (see resolveSecrets).
	secrets map[string]string
	// pending are call outcomes in x.ledger not written yet: they are
	// written with the settle, or before any other write (see record).
	pending []store.StepFinish
	// status is run.status as expressions see it: "running" during the
	// steps, then their outcome for the finally steps; failedStep and
	// failure name the step that failed the run and why.
	status     string
	failedStep string
	failure    string
}

// flow is what a step tells the run loop.
type flow int

const (
	flowNext    flow = iota // go on with the next step
	flowDone                // settled or parked: stop
	flowCancel              // settle cancelled
	flowRelease             // the engine stops: release the run for another peer
	flowLost                // the run is not ours any more: stop writing
	flowFailed              // a step failed the run (failedStep, failure): run the finally steps, settle failed
)

// sctx is the context of store writes: they must complete even when the
// execution is being cancelled (recording a cancel is a write).
func (x *execution) sctx() context.Context { return context.WithoutCancel(x.ctx) }

func (x *execution) execute() {
	e := x.e
	var c *store.Claimed
	if x.claimed != nil {
		c = &store.Claimed{Run: x.claimed, PrevStatus: store.RunQueued}
	} else {
		var err error
		c, err = e.st.ClaimRun(x.sctx(), store.ClaimParams{ID: x.id, Claim: x.claim, PID: e.pid, Now: e.now()})
		if err != nil {
			var se *store.RunStateError
			if !errors.As(err, &se) {
				e.log.Warn("claim run", "run", x.id, "err", err)
			}
			return
		}
	}
	x.owned.Store(true)
	x.run = c.Run
	x.redact = &redactor{}
	x.j = e.openJournal(x.id)
	x.j.redact = x.redact
	defer x.j.close()
	x.noteClaim(c)
	e.log.Info("run executing", "run", x.id, "target", c.Run.Target, "trigger", c.Run.Trigger.Kind, "was", c.PrevStatus)
	if x.claimed == nil {
		e.changed(x.id) // Launch announced a run it stored claimed already
	}

	if c.Run.CancelRequested && !hasFinally(c.Run, x.launched) {
		x.finishFlow(flowCancel)
		return
	}
	if l := x.launched; l != nil {
		// Fresh from Launch: nothing in the ledger yet.
		x.wf, x.input, x.launchEnv, x.ledger = l.wf, l.input, l.env, map[callKey]*store.LedgerEntry{}
	} else {
		l, err := parseLaunched(c.Run.Literals)
		if err != nil {
			if c.Run.CancelRequested {
				x.finishFlow(flowCancel)
				return
			}
			x.settle(store.RunFailed, nil, err.Error())
			return
		}
		x.wf, x.input, x.launchEnv = l.wf, l.input, l.env
		entries, err := e.st.Ledger(x.sctx(), x.id)
		if err != nil {
			x.finishFlow(x.storeFailed("read ledger", err))
			return
		}
		x.ledger = make(map[callKey]*store.LedgerEntry, len(entries))
		for _, en := range entries {
			x.ledger[callKey{en.Path, en.Position}] = en
		}
	}
	x.results = make(map[string]workflows.StepResult, len(x.wf.Steps)+len(x.wf.Finally))
	x.status = string(store.RunRunning)
	if c.Run.CancelRequested {
		x.replayResults() // cancelled while no process held it: straight to finally
		x.conclude(flowCancel)
		return
	}
	x.conclude(x.steps())
}

// steps runs the workflow's steps until one stops the run.
func (x *execution) steps() flow {
	for _, st := range x.wf.Steps {
		if x.interrupted() {
			return x.interruption()
		}
		if f := x.step(st); f != flowNext {
			return f
		}
	}
	return flowNext
}

// result evaluates the workflow's `result:`; errText says why it could
// not.
func (x *execution) result() (result json.RawMessage, errText string) {
	if x.wf.Result == nil {
		return nil, ""
	}
	v, err := x.wf.Result.Eval(x.env())
	if err != nil {
		return nil, "result: " + err.Error()
	}
	if result, err = json.Marshal(v); err != nil {
		return nil, "result: encode: " + err.Error()
	}
	return result, ""
}

// noteClaim writes the journal's first record, and says who resumed the
// run.
func (x *execution) noteClaim(c *store.Claimed) {
	e := x.e
	var size int64 // a run fresh from Launch has no journal yet
	if x.launched == nil {
		var err error
		if size, err = e.journals.size(x.id); err != nil {
			size = -1 // cannot tell: do not keep the journal with the run
		}
	}
	x.j.noFile = size == 0
	if size <= 0 {
		x.j.add(Record{Type: RecordStart, Run: x.id, Target: c.Run.Target, PID: e.pid})
	}
	switch {
	case c.PrevStatus == store.RunRunning && c.PrevOwnerPID != 0 && c.PrevOwnerPID != e.pid:
		x.j.add(Record{Type: RecordNote, PID: e.pid, Text: fmt.Sprintf("resumed by pid %d; previous owner pid %d is gone", e.pid, c.PrevOwnerPID)})
	case size == 0:
	case c.PrevStatus == store.RunWaiting:
		x.j.add(Record{Type: RecordNote, PID: e.pid, Text: fmt.Sprintf("resumed by pid %d (wake time reached)", e.pid)})
	default:
		x.j.add(Record{Type: RecordNote, PID: e.pid, Text: fmt.Sprintf("resumed by pid %d", e.pid)})
	}
}

// interrupted reports whether the execution must stop at this step
// boundary: its context ended, or the engine is stopping.
func (x *execution) interrupted() bool {
	if x.ctx.Err() != nil {
		return true
	}
	select {
	case <-x.e.stopping:
		return true
	default:
		return false
	}
}

// interruption maps why the execution must stop to a flow.
func (x *execution) interruption() flow {
	cause := context.Cause(x.ctx)
	switch {
	case errors.Is(cause, errCancelRequested):
		return flowCancel
	case errors.Is(cause, errStopping) || cause == nil:
		return flowRelease // the engine stops (or is stopping: cause nil)
	default:
		return flowLost
	}
}

func (x *execution) finishFlow(f flow) {
	switch f {
	case flowCancel:
		x.settle(store.RunCancelled, nil, "cancelled")
	case flowRelease:
		if x.flushPending() != flowNext {
			return
		}
		if _, err := x.e.st.ReleaseRun(x.sctx(), x.id, x.claim); err != nil {
			x.e.log.Warn("release run", "run", x.id, "err", err)
			return
		}
		x.j.add(Record{Type: RecordNote, PID: x.e.pid, Text: fmt.Sprintf("released by pid %d, which is stopping; another peer resumes the run", x.e.pid)})
	}
}

// storeFailed handles a store write the execution could not make.
func (x *execution) storeFailed(what string, err error) flow {
	var se *store.RunStateError
	switch {
	case errors.Is(err, store.ErrCancelRequested):
		return flowCancel
	case errors.Is(err, store.ErrNotOwner), errors.As(err, &se):
		return flowLost
	}
	x.e.log.Error(what, "run", x.id, "err", err)
	x.j.add(Record{Type: RecordNote, PID: x.e.pid, Text: fmt.Sprintf("%s: %v; pid %d stops executing the run, a peer resumes it", what, err, x.e.pid)})
	return flowLost
}

// settle ends the run, with what is pending: call outcomes and, when the
// run wrote nothing to a journal file, its journal (one write, no file).
func (x *execution) settle(status store.RunStatus, result json.RawMessage, errText string) {
	result, errText = x.redact.raw(result), x.redact.str(errText)
	end := Record{Type: RecordEnd, Status: string(status), Result: result, Error: errText}
	x.j.sync() // what it flushed is there for a follower that sees the settle
	journal, inline := x.j.inline(end)
	now := x.e.now()
	notify := x.e.notifications(NotifyEvent{Run: x.run, Status: status, Error: errText, Now: now})
	r, err := x.e.st.SettleRun(x.sctx(), store.SettleParams{ID: x.id, Claim: x.claim, Status: status, Result: result, Error: errText, Ledger: x.pending, Journal: journal, Now: now, Notify: notify})
	if err != nil {
		x.storeFailed("settle run", err)
		return
	}
	x.pending = nil
	x.run = r
	if inline {
		x.j.stored()
	} else {
		x.j.write(end)
	}
	// Its last call's outcome is in the ledger now; whatever left a step
	// file, an inline journal too, it goes with the settle.
	x.e.removeStepFile(x.id)
	x.e.log.Info("run settled", "run", x.id, "target", r.Target, "status", status, "error", errText)
}

func (x *execution) env() workflows.Env {
	return workflows.Env{
		Input:   x.input,
		Steps:   x.results,
		Run:     workflows.RunInfo{ID: x.id, Target: x.run.Target, Trigger: x.run.Trigger.Kind, Status: x.status, FailedStep: x.failedStep},
		Secrets: x.secrets,
	}
}

// step executes (or replays) one step and its retries.
func (x *execution) step(st *workflows.Step) flow {
	first := x.ledger[callKey{st.ID, 1}]
	if first != nil && first.State == store.StepFinished && first.Status == StepSkipped {
		x.results[st.ID] = resultOf(first)
		return flowNext
	}
	if st.If != nil && first == nil {
		ok, err := st.If.EvalBool(x.env())
		if err != nil {
			return x.failStep(st, 1, "if: "+err.Error())
		}
		if !ok {
			// Nothing external happened: the skip is written with the
			// next write (in the end, the settle).
			en := x.record(st, 1, StepSkipped, nil, "")
			x.results[st.ID] = resultOf(en)
			x.j.add(Record{Type: RecordStep, Step: st.ID, Event: "skipped", Text: "condition is false: " + st.If.String()})
			return flowNext
		}
	}
	for pos := 1; ; {
		en := x.ledger[callKey{st.ID, pos}]
		if en == nil || en.State != store.StepFinished {
			if f := x.call(st, pos, en); f != flowNext {
				return f
			}
			continue // call recorded the outcome: look at it
		}
		switch en.Status {
		case StepSucceeded, StepSkipped:
			x.results[st.ID] = resultOf(en)
			return flowNext
		case StepCancelled:
			return flowCancel
		}
		x.results[st.ID] = resultOf(en)
		if pos >= st.Retry.Attempts || decodeRecord(en.Result).Final {
			return x.failRun(st, en.Error)
		}
		pos++
		if x.ledger[callKey{st.ID, pos}] == nil && st.Retry.Backoff > 0 {
			x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "retrying", Text: fmt.Sprintf("attempt %d of %d in %s", pos, st.Retry.Attempts, st.Retry.Backoff)})
			if f := x.pause(st.Retry.Backoff); f != flowNext {
				return f
			}
		}
	}
}

// failStep records a call that failed before anything was dispatched and
// fails the run (one write: the outcome rides with the settle).
func (x *execution) failStep(st *workflows.Step, pos int, errText string) flow {
	// Final: a replay must not take this for a try that a retry follows.
	en := x.record(st, pos, StepFailed, json.RawMessage(`{"final":true}`), errText)
	x.results[st.ID] = resultOf(en)
	x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "finished", Status: StepFailed, Error: errText})
	return x.failRun(st, errText)
}

// failRun is st's failure after its last try: the run goes on when the
// step says continue_on_error, and otherwise ends failed (after the
// finally steps).
func (x *execution) failRun(st *workflows.Step, errText string) flow {
	if st.ContinueOnError {
		return flowNext
	}
	if x.failedStep == "" {
		x.failedStep, x.failure = st.ID, fmt.Sprintf("step %s: %s", st.ID, errText)
	}
	return flowFailed
}

// call executes call pos of st, or resumes it when en (started, never
// finished) says it began before. It returns flowNext once the call's
// outcome is in x.ledger.
func (x *execution) call(st *workflows.Step, pos int, en *store.LedgerEntry) flow {
	switch st.Kind {
	case workflows.KindSleep:
		return x.sleepStep(st, pos, en)
	case workflows.KindAsk:
		return x.askStep(st, pos, en)
	}
	if en != nil && x.supervised(st) {
		// An earlier owner started it under a supervisor: take its result,
		// waiting for it while the supervisor lives. Its supervisor
		// redacted what it recorded; what reaches the ledger is redacted
		// here too, as the owner that dispatched it would have.
		if _, err := x.redactSecretsOf(st); err != nil {
			x.j.add(Record{Type: RecordNote, PID: x.e.pid, Step: st.ID, Text: fmt.Sprintf("step %s: %v; its supervisor redacted its output", st.ID, err)})
		}
		res, found, f := x.attachStep(st, pos, en.Starts)
		switch {
		case f != flowNext:
			return f
		case found == attachTaken:
			return x.processOutcome(st, pos, res)
		case found == attachUnstarted && unstartedForSure(en):
			// Started under a supervisor that never reached the command:
			// nothing of it ran, nothing is ambiguous.
			x.j.add(Record{Type: RecordNote, PID: x.e.pid, Step: st.ID, Text: fmt.Sprintf("step %s was started by an earlier owner and never reached its command; running it", st.ID)})
			return x.dispatch(st, pos)
		}
	}
	if en != nil {
		switch {
		case en.Answer != nil && *en.Answer == AnswerSkip:
			x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "skipped", Text: "skipped by answer after an interruption"})
			return x.finish(st, pos, StepSkipped, stepRecord{}, "")
		case en.Answer != nil && *en.Answer == AnswerFail:
			return x.failStep(st, pos, "it may or may not have run; failed by answer")
		case en.Answer != nil:
			x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "interrupted", Text: "running it again by answer"})
		case st.SafeToRepeat:
			x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "interrupted", Text: "it was interrupted; running it again (safe_to_repeat)"})
		default:
			return x.parkAmbiguous(st, pos)
		}
	}
	return x.dispatch(st, pos)
}
