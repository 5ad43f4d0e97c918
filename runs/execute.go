package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

// Ledger step statuses.
const (
	StepSucceeded = "succeeded"
	StepFailed    = "failed"
	StepSkipped   = "skipped"
	StepCancelled = "cancelled"
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
	// pending are call outcomes in x.ledger not written yet: they are
	// written with the settle, or before any other write (see record).
	pending []store.StepFinish
}

type callKey struct {
	path string
	pos  int
}

// flow is what a step tells the run loop.
type flow int

const (
	flowNext    flow = iota // go on with the next step
	flowDone                // settled or parked: stop
	flowCancel              // settle cancelled
	flowRelease             // the engine stops: release the run for another peer
	flowLost                // the run is not ours any more: stop writing
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
	x.j = e.openJournal(x.id)
	defer x.j.close()
	x.noteClaim(c)
	if x.claimed == nil {
		e.changed(x.id) // Launch announced a run it stored claimed already
	}

	if c.Run.CancelRequested {
		x.finishFlow(flowCancel)
		return
	}
	if l := x.launched; l != nil {
		// Fresh from Launch: nothing in the ledger yet.
		x.wf, x.input, x.ledger = l.wf, l.input, map[callKey]*store.LedgerEntry{}
	} else {
		var err error
		if x.wf, x.input, err = parseLiterals(c.Run.Literals); err != nil {
			x.settle(store.RunFailed, nil, err.Error())
			return
		}
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
	x.results = make(map[string]workflows.StepResult, len(x.wf.Steps))
	for _, st := range x.wf.Steps {
		if x.interrupted() {
			x.finishFlow(x.interruption())
			return
		}
		if f := x.step(st); f != flowNext {
			x.finishFlow(f)
			return
		}
	}
	var result json.RawMessage
	if x.wf.Result != nil {
		v, err := x.wf.Result.Eval(x.env())
		if err != nil {
			x.settle(store.RunFailed, nil, "result: "+err.Error())
			return
		}
		if result, err = json.Marshal(v); err != nil {
			x.settle(store.RunFailed, nil, "result: encode: "+err.Error())
			return
		}
	}
	x.settle(store.RunSucceeded, result, "")
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
	end := Record{Type: RecordEnd, Status: string(status), Result: result, Error: errText}
	journal, inline := x.j.inline(end)
	r, err := x.e.st.SettleRun(x.sctx(), store.SettleParams{ID: x.id, Claim: x.claim, Status: status, Result: result, Error: errText, Ledger: x.pending, Journal: journal})
	if err != nil {
		x.storeFailed("settle run", err)
		return
	}
	x.pending = nil
	x.run = r
	if inline {
		x.j.stored()
		return
	}
	x.j.add(end)
}

func (x *execution) env() workflows.Env {
	return workflows.Env{
		Input: x.input,
		Steps: x.results,
		Run:   workflows.RunInfo{ID: x.id, Target: x.run.Target, Trigger: x.run.Trigger.Kind},
	}
}

// resultOf is a finished call as expressions see it.
func resultOf(en *store.LedgerEntry) workflows.StepResult {
	rec := decodeRecord(en.Result)
	r := workflows.StepResult{
		Status:     en.Status,
		Stdout:     trimNewline(rec.Stdout),
		Stderr:     trimNewline(rec.Stderr),
		ExitCode:   rec.ExitCode,
		StatusCode: rec.StatusCode,
		Body:       rec.Body,
	}
	if rec.Answer != nil {
		r.Answer = *rec.Answer
	}
	switch workflows.StepKind(en.Kind) {
	case workflows.KindExec, workflows.KindShell:
		r.Output = workflows.ParseOutput(rec.Stdout)
	case workflows.KindHTTP:
		r.Output = workflows.ParseOutput(rec.Body)
	}
	return r
}

// trimNewline drops one trailing line break, as shell command
// substitution does, so `${{ steps.x.stdout }}` reads naturally.
func trimNewline(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return strings.TrimSuffix(s, "\r")
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
		if pos >= st.Retry.Attempts {
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
	x.record(st, pos, StepFailed, nil, errText)
	x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "finished", Status: StepFailed, Error: errText})
	return x.failRun(st, errText)
}

func (x *execution) failRun(st *workflows.Step, errText string) flow {
	x.settle(store.RunFailed, nil, fmt.Sprintf("step %s: %s", st.ID, errText))
	return flowDone
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

// parkAmbiguous asks what to do with a step that may or may not have run.
func (x *execution) parkAmbiguous(st *workflows.Step, pos int) flow {
	q := &store.Question{
		ID:       ids.New("q"),
		Text:     fmt.Sprintf("step %s may or may not have run: retry, skip or fail?", st.ID),
		Choices:  []string{AnswerRetry, AnswerSkip, AnswerFail},
		Kind:     "ambiguous",
		Step:     st.ID,
		Position: pos,
		AskedAt:  x.e.now().UTC(),
	}
	x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "interrupted", Text: "it was interrupted and is not safe to repeat"})
	return x.park(q, time.Time{})
}

func (x *execution) park(q *store.Question, wake time.Time) flow {
	if f := x.flushPending(); f != flowNext {
		return f
	}
	r, err := x.e.st.ParkRun(x.sctx(), store.ParkParams{ID: x.id, Claim: x.claim, Question: q, WakeAt: wake})
	if err != nil {
		return x.storeFailed("park run", err)
	}
	x.run = r
	if q != nil {
		x.j.add(Record{Type: RecordQuestion, Step: q.Step, Question: q, Text: q.Text})
	} else {
		x.j.add(Record{Type: RecordNote, Text: fmt.Sprintf("waiting until %s", wake.UTC().Format(time.RFC3339))})
	}
	return flowDone
}

// start records a call's start (before its effect), with the pending
// outcomes.
func (x *execution) start(st *workflows.Step, pos int, detail *stepDetail) (*store.LedgerEntry, error) {
	var raw json.RawMessage
	if detail != nil {
		b, err := json.Marshal(detail)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	en, err := x.e.st.StartStep(x.sctx(), store.StepStart{RunID: x.id, Claim: x.claim, Path: st.ID, Position: pos, Kind: string(st.Kind), PID: x.e.pid, Detail: raw, Ledger: x.pending})
	if err != nil {
		return nil, err
	}
	x.pending = nil
	x.ledger[callKey{st.ID, pos}] = en
	return en, nil
}

// finish records a call's outcome: it is written with the run's next
// write, before anything else is dispatched (the next call's start, a
// park, a wait, or the settle).
func (x *execution) finish(st *workflows.Step, pos int, status string, rec stepRecord, errText string) flow {
	b, err := json.Marshal(rec)
	if err != nil {
		return x.storeFailed("encode step result", err)
	}
	x.record(st, pos, status, b, errText)
	return flowNext
}

// record notes call pos of st as finished, in x.ledger at once and in the
// store with the next write (see pending). It returns the entry.
func (x *execution) record(st *workflows.Step, pos int, status string, result json.RawMessage, errText string) *store.LedgerEntry {
	key := callKey{st.ID, pos}
	en := &store.LedgerEntry{RunID: x.id, Path: st.ID, Position: pos, Kind: string(st.Kind)}
	if old := x.ledger[key]; old != nil {
		c := *old
		en = &c
	}
	en.State, en.Status, en.Result, en.Error = store.StepFinished, status, result, errText
	en.FinishedAt = x.e.now().UTC().Truncate(time.Millisecond)
	x.ledger[key] = en
	x.pending = append(x.pending, store.StepFinish{RunID: x.id, Claim: x.claim, Path: st.ID, Position: pos, Kind: string(st.Kind), Status: status, Result: result, Error: errText})
	return en
}

// writePending writes the pending call outcomes.
func (x *execution) writePending() error {
	for len(x.pending) > 0 {
		if _, err := x.e.st.FinishStep(x.sctx(), x.pending[0]); err != nil {
			return err
		}
		x.pending = x.pending[1:]
	}
	x.pending = nil
	return nil
}

// flushPending is writePending for a caller that wants a flow.
func (x *execution) flushPending() flow {
	if err := x.writePending(); err != nil {
		return x.storeFailed("record step result", err)
	}
	return flowNext
}

// pause writes what is pending (call outcomes, journal records), then
// waits d unless the execution ends or the engine stops first.
func (x *execution) pause(d time.Duration) flow {
	if f := x.flushPending(); f != flowNext {
		return f
	}
	x.j.flush()
	if !x.wait(d) {
		return x.interruption()
	}
	return flowNext
}

// wait sleeps for d unless the execution ends or the engine stops first.
func (x *execution) wait(d time.Duration) bool {
	t := x.e.clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-x.ctx.Done():
		return false
	case <-x.e.stopping:
		return false
	}
}

func (x *execution) sleepStep(st *workflows.Step, pos int, en *store.LedgerEntry) flow {
	var until time.Time
	if en != nil {
		until = decodeDetail(en.Detail).Until
	}
	if until.IsZero() {
		until = x.e.now().Add(st.Sleep).UTC().Truncate(time.Millisecond)
		if _, err := x.start(st, pos, &stepDetail{Until: until}); err != nil {
			return x.storeFailed("record step start", err)
		}
		x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "started", Text: fmt.Sprintf("sleeping %s, until %s", st.Sleep, until.Format(time.RFC3339))})
	}
	remaining := until.Sub(x.e.now())
	if remaining > x.e.opts.ParkSleepsOver {
		return x.park(nil, until)
	}
	if remaining > 0 {
		if f := x.pause(remaining); f != flowNext {
			return f
		}
	}
	x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "finished", Status: StepSucceeded})
	return x.finish(st, pos, StepSucceeded, stepRecord{Until: until}, "")
}

func (x *execution) askStep(st *workflows.Step, pos int, en *store.LedgerEntry) flow {
	now := x.e.now().UTC()
	if en == nil {
		text, err := st.Ask.Text.Render(x.env())
		if err != nil {
			return x.failStep(st, pos, "ask: "+err.Error())
		}
		q := &store.Question{ID: ids.New("q"), Text: text, Choices: st.Ask.Choices, Kind: "ask", Step: st.ID, Position: pos, AskedAt: now}
		if st.Timeout > 0 {
			q.Deadline = now.Add(st.Timeout).Truncate(time.Millisecond)
		}
		if _, err := x.start(st, pos, &stepDetail{Question: q}); err != nil {
			return x.storeFailed("record step start", err)
		}
		return x.park(q, q.Deadline)
	}
	if en.Answer != nil {
		a := *en.Answer
		x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "finished", Status: StepSucceeded, Text: "answer: " + a})
		return x.finish(st, pos, StepSucceeded, stepRecord{Answer: &a}, "")
	}
	q := decodeDetail(en.Detail).Question
	if q == nil {
		// Started but the question was never stored: ask afresh.
		text, err := st.Ask.Text.Render(x.env())
		if err != nil {
			return x.failStep(st, pos, "ask: "+err.Error())
		}
		q = &store.Question{ID: ids.New("q"), Text: text, Choices: st.Ask.Choices, Kind: "ask", Step: st.ID, Position: pos, AskedAt: now}
	}
	if !q.Deadline.IsZero() && !now.Before(q.Deadline) {
		if !st.Ask.HasDefault {
			return x.failStep(st, pos, fmt.Sprintf("no answer within %s", st.Timeout))
		}
		a := st.Ask.Default
		x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "finished", Status: StepSucceeded, Text: "no answer in time; default answer: " + a})
		return x.finish(st, pos, StepSucceeded, stepRecord{Answer: &a}, "")
	}
	return x.park(q, q.Deadline)
}

// dispatch runs an exec, shell or http call: it renders the step, records
// the start, dispatches, and records the outcome.
func (x *execution) dispatch(st *workflows.Step, pos int) flow {
	if x.interrupted() {
		return x.interruption() // nothing dispatched yet: nothing ambiguous
	}
	switch st.Kind {
	case workflows.KindExec, workflows.KindShell:
		spec, err := x.processSpec(st)
		if err != nil {
			return x.failStep(st, pos, err.Error())
		}
		if _, err := x.start(st, pos, nil); err != nil {
			return x.storeFailed("record step start", err)
		}
		spec.onStart = func(pid int) {
			x.j.write(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "started", PID: pid})
		}
		spec.onLine = func(stream, line string) {
			x.j.write(Record{Type: RecordText, Step: st.ID, Stream: stream, Text: line})
		}
		res := runProcess(x.ctx, spec)
		rec := stepRecord{PID: res.PID, ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr, StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated}
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
	case workflows.KindHTTP:
		req, err := x.httpRequest(st)
		if err != nil {
			return x.failStep(st, pos, err.Error())
		}
		if _, err := x.start(st, pos, nil); err != nil {
			return x.storeFailed("record step start", err)
		}
		x.j.write(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "started", Text: req.method + " " + req.redacted})
		rec, errText := x.doHTTP(st, req)
		if x.ctx.Err() != nil {
			return x.cutShort(st, pos, rec)
		}
		status := StepSucceeded
		if errText != "" {
			status = StepFailed
		}
		x.j.add(Record{Type: RecordStep, Step: st.ID, Attempt: pos, Event: "finished", Status: status, Error: errText})
		return x.finish(st, pos, status, rec, errText)
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
	return flowCancel
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
	dir, err := workDir(x.e.ws.Root, st.Dir)
	if err != nil {
		return procSpec{}, err
	}
	return procSpec{
		argv:    argv,
		dir:     dir,
		env:     stepEnv(vars),
		timeout: st.Timeout,
		grace:   x.e.opts.KillGrace,
		cap:     x.e.opts.OutputCap,
	}, nil
}
