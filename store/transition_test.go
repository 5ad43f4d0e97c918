package store

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

var (
	t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Minute + 1500*time.Microsecond) // truncated to the millisecond when written
)

// runIn returns a run at revision 3 in status st; a running one is owned
// by claim "c".
func runIn(st RunStatus) *Run {
	r := &Run{ID: "run_1", Status: st, Revision: 3, CreatedAt: t0, UpdatedAt: t0}
	if st == RunRunning {
		r.Claim, r.OwnerPID = "c", 7
	}
	return r
}

func waitingOn(q *Question, wake time.Time) *Run {
	r := runIn(RunWaiting)
	r.Question, r.WakeAt = q, wake
	return r
}

// refusal says how a transition must refuse; the zero value: not at all.
type refusal struct {
	state   RunStatus // a *RunStateError with this status
	is      error     // errors.Is
	anyFail bool      // some error
}

func checkRefusal(t *testing.T, err error, want refusal) {
	t.Helper()
	var se *RunStateError
	switch {
	case want == refusal{}:
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
	case want.state != "":
		if !errors.As(err, &se) || se.Status != want.state || !errors.Is(err, ErrRunState) {
			t.Fatalf("err = %v, want a *RunStateError in status %s", err, want.state)
		}
	case want.is != nil:
		if !errors.Is(err, want.is) {
			t.Fatalf("err = %v, want one wrapping %v", err, want.is)
		}
	case err == nil:
		t.Fatal("accepted, want a refusal")
	}
}

// checkNext checks what every transition does to the record.
func checkNext(t *testing.T, cur, next *Run) {
	t.Helper()
	if next.Revision != cur.Revision+1 || !next.UpdatedAt.Equal(Millis(t1)) {
		t.Errorf("next revision %d at %v, want %d at %v", next.Revision, next.UpdatedAt, cur.Revision+1, Millis(t1))
	}
	if cur.Revision != 3 || !cur.UpdatedAt.Equal(t0) {
		t.Errorf("the current record was changed: %+v", cur)
	}
}

// checkApplied checks a transition's outcome: err against want and, when
// the transition went ahead, next against cur as checkNext does. It
// reports whether the transition went ahead.
func checkApplied(t *testing.T, cur, next *Run, err error, want refusal) bool {
	t.Helper()
	checkRefusal(t, err, want)
	if err != nil {
		return false
	}
	checkNext(t, cur, next)
	return true
}

func TestApplyClaim(t *testing.T) {
	t.Parallel()
	ask := &Question{ID: "q1", Step: "s", Position: 1}
	started := runIn(RunRunning)
	started.StartedAt = t0
	cases := []struct {
		name    string
		cur     *Run
		claim   string
		refusal refusal
		started time.Time
	}{
		{name: "queued", cur: runIn(RunQueued), claim: "n", started: Millis(t1)},
		{name: "running: taken over, first start kept", cur: started, claim: "n", started: t0},
		{name: "waiting until a wake that came", cur: waitingOn(ask, t1.Add(-time.Second)), claim: "n", started: Millis(t1)},
		{name: "waiting until a wake to come", cur: waitingOn(nil, t1.Add(time.Second)), claim: "n", refusal: refusal{state: RunWaiting}},
		{name: "waiting on an answer", cur: waitingOn(ask, time.Time{}), claim: "n", refusal: refusal{state: RunWaiting}},
		{name: "settled", cur: runIn(RunSucceeded), claim: "n", refusal: refusal{state: RunSucceeded}},
		{name: "empty claim", cur: runIn(RunQueued), refusal: refusal{anyFail: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ApplyClaim(c.cur, ClaimParams{ID: c.cur.ID, Claim: c.claim, PID: 9, Now: t1})
			checkRefusal(t, err, c.refusal)
			if err != nil {
				return
			}
			r := got.Run
			checkNext(t, c.cur, r)
			if r.Status != RunRunning || r.Claim != c.claim || r.OwnerPID != 9 || r.Question != nil || !r.WakeAt.IsZero() || !r.StartedAt.Equal(c.started) {
				t.Errorf("claimed run = %+v", r)
			}
			if got.PrevStatus != c.cur.Status || got.PrevOwnerPID != c.cur.OwnerPID {
				t.Errorf("previous = %s/%d, want %s/%d", got.PrevStatus, got.PrevOwnerPID, c.cur.Status, c.cur.OwnerPID)
			}
		})
	}
}

func TestApplyPark(t *testing.T) {
	t.Parallel()
	cancelled := runIn(RunRunning)
	cancelled.CancelRequested = true
	q := &Question{ID: "q1", Text: "?", Choices: []string{"a"}, Step: "s", Position: 1}
	cases := []struct {
		name    string
		cur     *Run
		p       ParkParams
		refusal refusal
	}{
		{name: "on a question", cur: runIn(RunRunning), p: ParkParams{Claim: "c", Question: q}},
		{name: "a durable sleep", cur: runIn(RunRunning), p: ParkParams{Claim: "c", WakeAt: t1.Add(time.Hour)}},
		{name: "not the owner", cur: runIn(RunRunning), p: ParkParams{Claim: "x", Question: q}, refusal: refusal{is: ErrNotOwner}},
		{name: "no claim", cur: runIn(RunQueued), p: ParkParams{Question: q}, refusal: refusal{is: ErrNotOwner}},
		{name: "nothing to wait on", cur: runIn(RunRunning), p: ParkParams{Claim: "c"}, refusal: refusal{anyFail: true}},
		{name: "cancel requested", cur: cancelled, p: ParkParams{Claim: "c", Question: q}, refusal: refusal{is: ErrCancelRequested}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.p.ID, c.p.Now = c.cur.ID, t1
			r, err := ApplyPark(c.cur, c.p)
			if !checkApplied(t, c.cur, r, err, c.refusal) {
				return
			}
			if r.Status != RunWaiting || r.Claim != "" || r.OwnerPID != 0 || !r.WakeAt.Equal(Millis(c.p.WakeAt)) {
				t.Errorf("parked run = %+v", r)
			}
			if (r.Question == nil) != (c.p.Question == nil) || r.Question != nil && (r.Question == c.p.Question || r.Question.ID != q.ID) {
				t.Errorf("question = %+v, want a copy of %+v", r.Question, c.p.Question)
			}
		})
	}
}

func TestApplySettle(t *testing.T) {
	t.Parallel()
	settled := runIn(RunFailed)
	settled.Claim = "c"
	cases := []struct {
		name    string
		cur     *Run
		p       SettleParams
		refusal refusal
	}{
		{name: "succeeded", cur: runIn(RunRunning), p: SettleParams{Claim: "c", Status: RunSucceeded, Result: json.RawMessage(`{"ok":true}`), Journal: []byte("j")}},
		{name: "failed", cur: runIn(RunRunning), p: SettleParams{Claim: "c", Status: RunFailed, Error: "boom"}},
		{name: "not a final status", cur: runIn(RunRunning), p: SettleParams{Claim: "c", Status: RunWaiting}, refusal: refusal{anyFail: true}},
		{name: "settled already", cur: settled, p: SettleParams{Claim: "c", Status: RunSucceeded}, refusal: refusal{state: RunFailed}},
		{name: "not the owner", cur: runIn(RunRunning), p: SettleParams{Claim: "x", Status: RunSucceeded}, refusal: refusal{is: ErrNotOwner}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.p.ID, c.p.Now = c.cur.ID, t1
			r, err := ApplySettle(c.cur, c.p)
			if !checkApplied(t, c.cur, r, err, c.refusal) {
				return
			}
			if r.Status != c.p.Status || string(r.Result) != string(c.p.Result) || r.Error != c.p.Error || string(r.Journal) != string(c.p.Journal) ||
				r.Claim != "" || !r.FinishedAt.Equal(Millis(t1)) {
				t.Errorf("settled run = %+v", r)
			}
		})
	}
}

func TestApplyRelease(t *testing.T) {
	t.Parallel()
	cur := runIn(RunRunning)
	if _, err := ApplyRelease(cur, ReleaseParams{ID: cur.ID, Claim: "x", Now: t1}); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("release by another claim: %v", err)
	}
	r, err := ApplyRelease(cur, ReleaseParams{ID: cur.ID, Claim: "c", Now: t1})
	if err != nil {
		t.Fatal(err)
	}
	checkNext(t, cur, r)
	if r.Status != RunRunning || r.Claim != "" || r.OwnerPID != 0 {
		t.Errorf("released run = %+v", r)
	}
}

func TestApplyAnswer(t *testing.T) {
	t.Parallel()
	q := &Question{ID: "q1", Step: "ask", Position: 2}
	entry := &LedgerEntry{RunID: "run_1", Path: "ask", Position: 2, State: StepStarted}
	cases := []struct {
		name    string
		cur     *Run
		e       *LedgerEntry
		qid     string
		refusal refusal
	}{
		{name: "the open question", cur: waitingOn(q, t1.Add(time.Hour)), e: entry, qid: "q1"},
		{name: "another question", cur: waitingOn(q, time.Time{}), e: entry, qid: "q0", refusal: refusal{is: ErrStale}},
		{name: "asleep", cur: waitingOn(nil, t1), qid: "q1", refusal: refusal{state: RunWaiting}},
		{name: "running", cur: runIn(RunRunning), qid: "q1", refusal: refusal{state: RunRunning}},
		{name: "no ledger entry", cur: waitingOn(q, time.Time{}), qid: "q1", refusal: refusal{anyFail: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, e, err := ApplyAnswer(c.cur, c.e, AnswerParams{ID: c.cur.ID, QuestionID: c.qid, Answer: "yes", Now: t1})
			if !checkApplied(t, c.cur, r, err, c.refusal) {
				return
			}
			if r.Status != RunRunning || r.Question != nil || !r.WakeAt.IsZero() || r.Claim != "" {
				t.Errorf("answered run = %+v", r)
			}
			if e.Answer == nil || *e.Answer != "yes" || c.e.Answer != nil {
				t.Errorf("entry answer = %v, the given entry's %v; want yes on a copy", e.Answer, c.e.Answer)
			}
		})
	}
}

func TestApplyCancel(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cur       *Run
		status    RunStatus
		refusal   refusal
		finishing bool
	}{
		{cur: runIn(RunQueued), status: RunCancelled, finishing: true},
		{cur: waitingOn(&Question{ID: "q"}, time.Time{}), status: RunCancelled, finishing: true},
		{cur: runIn(RunRunning), status: RunRunning},
		{cur: runIn(RunCancelled), refusal: refusal{state: RunCancelled}},
		{cur: runIn(RunSucceeded), refusal: refusal{state: RunSucceeded}},
	}
	for _, c := range cases {
		t.Run(string(c.cur.Status), func(t *testing.T) {
			r, err := ApplyCancel(c.cur, CancelParams{ID: c.cur.ID, Reason: "stop", Now: t1})
			if !checkApplied(t, c.cur, r, err, c.refusal) {
				return
			}
			if r.Status != c.status || !r.CancelRequested {
				t.Errorf("cancelled run = %+v", r)
			}
			if c.finishing && (r.Error != "stop" || r.Question != nil || !r.FinishedAt.Equal(Millis(t1))) {
				t.Errorf("cancelled run = %+v, want it finished with the reason", r)
			}
			if !c.finishing && (r.Claim != c.cur.Claim || !r.FinishedAt.IsZero()) {
				t.Errorf("cancel of a running run = %+v, want only the request", r)
			}
		})
	}
}

func TestApplyStep(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		cur     *Run
		claim   string
		refusal refusal
	}{
		{name: "owner of a running run", cur: runIn(RunRunning), claim: "c"},
		{name: "another claim", cur: runIn(RunRunning), claim: "x", refusal: refusal{is: ErrNotOwner}},
		{name: "waiting", cur: func() *Run { r := waitingOn(nil, t1); r.Claim = "c"; return r }(), claim: "c", refusal: refusal{state: RunWaiting}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := ApplyStep(c.cur, c.claim, t1)
			checkApplied(t, c.cur, r, err, c.refusal)
		})
	}
}

func TestApplyStepStartAndFinish(t *testing.T) {
	t.Parallel()
	answer := "retry"
	started := &LedgerEntry{RunID: "run_1", Path: "s", Position: 1, Seq: 4, Kind: "tool", State: StepStarted, Starts: 1, Answer: &answer}
	finished := &LedgerEntry{RunID: "run_1", Path: "s", Position: 1, Seq: 4, Kind: "tool", State: StepFinished, Status: "succeeded"}
	start := StepStart{RunID: "run_1", Path: "s", Position: 1, Kind: "tool", PID: 9, Detail: json.RawMessage(`{"d":1}`), Now: t1}
	finish := StepFinish{RunID: "run_1", Path: "s", Position: 1, Kind: "skip", Status: "failed", Error: "e", Now: t1}

	cases := []struct {
		name    string
		apply   func() (*LedgerEntry, error)
		refusal refusal
		want    LedgerEntry // compared on the fields below
	}{
		{name: "start a new call", apply: func() (*LedgerEntry, error) { return ApplyStepStart(nil, start) },
			want: LedgerEntry{Kind: "tool", State: StepStarted, Starts: 1, StartedAt: Millis(t1)}},
		{name: "start a started call again", apply: func() (*LedgerEntry, error) { return ApplyStepStart(started, start) },
			want: LedgerEntry{Seq: 4, Kind: "tool", State: StepStarted, Starts: 2, StartedAt: Millis(t1)}},
		{name: "start a finished call", apply: func() (*LedgerEntry, error) { return ApplyStepStart(finished, start) }, refusal: refusal{is: ErrExists}},
		{name: "start a bad call", apply: func() (*LedgerEntry, error) { return ApplyStepStart(nil, StepStart{RunID: "run_1", Path: "s"}) }, refusal: refusal{anyFail: true}},
		{name: "finish a call never started", apply: func() (*LedgerEntry, error) { return ApplyStepFinish(nil, finish) },
			want: LedgerEntry{Kind: "skip", State: StepFinished, Status: "failed", Error: "e", FinishedAt: Millis(t1)}},
		{name: "finish a started call keeps its kind", apply: func() (*LedgerEntry, error) { return ApplyStepFinish(started, finish) },
			want: LedgerEntry{Seq: 4, Kind: "tool", State: StepFinished, Status: "failed", Error: "e", Starts: 1, FinishedAt: Millis(t1)}},
		{name: "finish a finished call", apply: func() (*LedgerEntry, error) { return ApplyStepFinish(finished, finish) }, refusal: refusal{is: ErrExists}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := c.apply()
			checkRefusal(t, err, c.refusal)
			if err != nil {
				return
			}
			if e.Seq != c.want.Seq || e.Kind != c.want.Kind || e.State != c.want.State || e.Starts != c.want.Starts || e.Status != c.want.Status ||
				e.Error != c.want.Error || !e.StartedAt.Equal(c.want.StartedAt) || !e.FinishedAt.Equal(c.want.FinishedAt) {
				t.Errorf("entry = %+v, want %+v", e, c.want)
			}
			if e.State == StepStarted && (e.Answer != nil || e.OwnerPID != 9 || string(e.Detail) != `{"d":1}`) {
				t.Errorf("started entry = %+v, want the answer cleared, the owner and detail set", e)
			}
		})
	}
	if started.Starts != 1 || started.Answer == nil || started.State != StepStarted {
		t.Errorf("the given entry was changed: %+v", started)
	}
}

func TestWriteLedger(t *testing.T) {
	t.Parallel()
	own := t0.Add(time.Second)
	fs := []StepFinish{{RunID: "other", Claim: "x", Path: "a", Position: 1}, {Path: "b", Position: 1, Now: own}}
	got := WriteLedger("run_1", "c", t1, fs)
	if got[0].RunID != "run_1" || got[0].Claim != "c" || !got[0].Now.Equal(t1) || !got[1].Now.Equal(own) {
		t.Errorf("WriteLedger = %+v", got)
	}
	if fs[0].RunID != "other" {
		t.Errorf("the given outcomes were changed: %+v", fs)
	}
}
