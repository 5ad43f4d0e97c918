package runs

import (
	"fmt"
	"time"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

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
	now := x.e.now()
	var notify []*store.Notification
	if q != nil {
		notify = x.e.notifications(NotifyEvent{Run: x.run, Status: store.RunWaiting, Question: q, Now: now})
	}
	r, err := x.e.st.ParkRun(x.sctx(), store.ParkParams{ID: x.id, Claim: x.claim, Question: q, WakeAt: wake, Now: now, Notify: notify})
	if err != nil {
		return x.storeFailed("park run", err)
	}
	x.run = r
	x.e.log.Info("run waiting", "run", x.id, "target", r.Target, "question", q != nil, "wake", wake)
	if q != nil {
		x.j.add(Record{Type: RecordQuestion, Step: q.Step, Question: q, Text: q.Text})
	} else {
		x.j.add(Record{Type: RecordNote, Text: fmt.Sprintf("waiting until %s", wake.UTC().Format(time.RFC3339))})
	}
	return flowDone
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
		q := &store.Question{ID: ids.New("q"), Text: text, Choices: st.Ask.Choices, Kind: "ask", For: st.Ask.For, Step: st.ID, Position: pos, AskedAt: now}
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
		q = &store.Question{ID: ids.New("q"), Text: text, Choices: st.Ask.Choices, Kind: "ask", For: st.Ask.For, Step: st.ID, Position: pos, AskedAt: now}
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
