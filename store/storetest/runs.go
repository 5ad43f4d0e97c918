package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

func testRuns(t *testing.T, newStore NewFunc) {
	t.Run("create and get", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		r := &store.Run{ID: "run_a", Target: "hello", Input: json.RawMessage(`{"who":"x"}`), Literals: json.RawMessage(`{"def":1}`), Trigger: store.Trigger{Kind: "manual"}}
		if err := s.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetRun(ctx, "run_a")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != store.RunQueued || got.Revision != 1 || got.Target != "hello" || string(got.Input) != `{"who":"x"}` || string(got.Literals) != `{"def":1}` || got.Trigger.Kind != "manual" {
			t.Fatalf("got %+v", got)
		}
		if got.OwnerPID != 0 || got.Claim != "" || got.Question != nil || !got.WakeAt.IsZero() || !got.StartedAt.IsZero() || !got.FinishedAt.IsZero() || got.CancelRequested {
			t.Fatalf("a new run has owner or wait fields set: %+v", got)
		}
		if err := s.CreateRun(ctx, &store.Run{ID: "run_a", Target: "other"}); !errors.Is(err, store.ErrExists) {
			t.Fatalf("second create with the same id: %v, want ErrExists", err)
		}
		if _, err := s.GetRun(ctx, "run_missing"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetRun(missing): %v, want ErrNotFound", err)
		}
		if c, _ := s.Counts(ctx); c.Runs != 1 {
			t.Fatalf("Counts().Runs = %d, want 1", c.Runs)
		}
	})
	t.Run("operation outcome", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		opCtx := store.WithOpID(ctx, "op_create_b")
		if err := s.CreateRun(opCtx, &store.Run{ID: "run_b", Target: "t"}); err != nil {
			t.Fatal(err)
		}
		if o, err := s.Outcome(ctx, "op_create_b"); err != nil || o != store.Committed {
			t.Fatalf("Outcome = %v, %v; want committed", o, err)
		}
		if err := s.CreateRun(opCtx, &store.Run{ID: "run_c", Target: "t"}); !errors.Is(err, store.ErrExists) {
			t.Fatalf("repeated operation id: %v, want ErrExists", err)
		}
		if _, err := s.GetRun(ctx, "run_c"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused operation left run_c behind: %v", err)
		}
	})
	t.Run("list filters and pages", func(t *testing.T) { t.Parallel(); testListRuns(t, open(t, newStore)) })
	t.Run("runnable and pending", func(t *testing.T) { t.Parallel(); testRunnable(t, open(t, newStore)) })
	t.Run("claim", func(t *testing.T) { t.Parallel(); testClaim(t, open(t, newStore)) })
	t.Run("ledger", func(t *testing.T) { t.Parallel(); testLedger(t, open(t, newStore)) })
	t.Run("park and answer", func(t *testing.T) { t.Parallel(); testParkAnswer(t, open(t, newStore)) })
	t.Run("settle and release", func(t *testing.T) { t.Parallel(); testSettleRelease(t, open(t, newStore)) })
	t.Run("cancel", func(t *testing.T) { t.Parallel(); testCancel(t, open(t, newStore)) })
	t.Run("settle with ledger outcomes", func(t *testing.T) { t.Parallel(); testSettleLedger(t, open(t, newStore)) })
	t.Run("run claims", func(t *testing.T) { t.Parallel(); testRunClaims(t, open(t, newStore)) })
	t.Run("changed runs", func(t *testing.T) { t.Parallel(); testChangedRuns(t, open(t, newStore)) })
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func mustCreate(t *testing.T, s store.Store, r *store.Run) *store.Run {
	t.Helper()
	if r.Target == "" {
		r.Target = "t"
	}
	if err := s.CreateRun(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

func mustClaim(t *testing.T, s store.Store, id, claim string) *store.Run {
	t.Helper()
	c, err := s.ClaimRun(context.Background(), store.ClaimParams{ID: id, Claim: claim, PID: 4242, Now: time.Now()})
	if err != nil {
		t.Fatalf("claim %s: %v", id, err)
	}
	return c.Run
}

func ids(runs []*store.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

func testListRuns(t *testing.T, s store.Store) {
	ctx := context.Background()
	for i := range 7 {
		target := "a"
		if i%2 == 1 {
			target = "b"
		}
		mustCreate(t, s, &store.Run{ID: fmt.Sprintf("run_%d", i), Target: target, CreatedAt: t0.Add(time.Duration(i) * time.Second)})
	}
	mustClaim(t, s, "run_3", "c3")

	all, next, err := s.ListRuns(ctx, store.RunFilter{})
	if err != nil || next != "" {
		t.Fatalf("list all: %v, next %q", err, next)
	}
	if got := fmt.Sprint(ids(all)); got != "[run_6 run_5 run_4 run_3 run_2 run_1 run_0]" {
		t.Fatalf("list all = %s, want newest first", got)
	}
	var paged []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		page, next, err := s.ListRuns(ctx, store.RunFilter{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 3 {
			t.Fatalf("page of %d runs with limit 3", len(page))
		}
		paged = append(paged, ids(page)...)
		if next == "" {
			break
		}
		cursor = next
	}
	if fmt.Sprint(paged) != fmt.Sprint(ids(all)) {
		t.Fatalf("pages %v, want %v", paged, ids(all))
	}
	bs, _, err := s.ListRuns(ctx, store.RunFilter{Target: "b"})
	if err != nil || fmt.Sprint(ids(bs)) != "[run_5 run_3 run_1]" {
		t.Fatalf("target b: %v %v", ids(bs), err)
	}
	running, _, err := s.ListRuns(ctx, store.RunFilter{Status: []store.RunStatus{store.RunRunning}})
	if err != nil || fmt.Sprint(ids(running)) != "[run_3]" {
		t.Fatalf("status running: %v %v", ids(running), err)
	}
	both, _, err := s.ListRuns(ctx, store.RunFilter{Status: []store.RunStatus{store.RunRunning, store.RunQueued}, Target: "a"})
	if err != nil || fmt.Sprint(ids(both)) != "[run_6 run_4 run_2 run_0]" {
		t.Fatalf("queued or running with target a: %v %v", ids(both), err)
	}
	r3, _ := s.GetRun(ctx, "run_3")
	changed, _, err := s.ListRuns(ctx, store.RunFilter{UpdatedAfter: r3.UpdatedAt.Add(-time.Millisecond)})
	if err != nil || len(changed) == 0 || !containsID(changed, "run_3") {
		t.Fatalf("updated after the claim: %v %v", ids(changed), err)
	}
	if later, _, _ := s.ListRuns(ctx, store.RunFilter{UpdatedAfter: r3.UpdatedAt.Add(time.Hour)}); len(later) != 0 {
		t.Fatalf("updated after the future: %v", ids(later))
	}
	if _, _, err := s.ListRuns(ctx, store.RunFilter{Cursor: "nonsense"}); err == nil {
		t.Fatal("an invalid cursor was accepted")
	}
}

func containsID(runs []*store.Run, id string) bool {
	for _, r := range runs {
		if r.ID == id {
			return true
		}
	}
	return false
}

func testRunnable(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := time.Now()
	mustCreate(t, s, &store.Run{ID: "run_queued", CreatedAt: t0, Literals: json.RawMessage(`{"big":"definition"}`)})
	mustCreate(t, s, &store.Run{ID: "run_running", CreatedAt: t0.Add(1 * time.Millisecond)})
	mustClaim(t, s, "run_running", "c1")
	mustCreate(t, s, &store.Run{ID: "run_sleep_due", CreatedAt: t0.Add(2 * time.Millisecond)})
	mustClaim(t, s, "run_sleep_due", "c2")
	mustCreate(t, s, &store.Run{ID: "run_sleep_later", CreatedAt: t0.Add(3 * time.Millisecond)})
	mustClaim(t, s, "run_sleep_later", "c3")
	mustCreate(t, s, &store.Run{ID: "run_question", CreatedAt: t0.Add(4 * time.Millisecond)})
	mustClaim(t, s, "run_question", "c4")
	mustCreate(t, s, &store.Run{ID: "run_done", CreatedAt: t0.Add(5 * time.Millisecond)})
	mustClaim(t, s, "run_done", "c5")

	if _, err := s.ParkRun(ctx, store.ParkParams{ID: "run_sleep_due", Claim: "c2", WakeAt: now.Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ParkRun(ctx, store.ParkParams{ID: "run_sleep_later", Claim: "c3", WakeAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	startAsk(t, s, "run_question", "c4", "q1")
	if _, err := s.SettleRun(ctx, store.SettleParams{ID: "run_done", Claim: "c5", Status: store.RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	got, err := s.RunnableRuns(ctx, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids(got)) != "[run_queued run_sleep_due run_running]" {
		t.Fatalf("runnable = %v, want the queued and the due sleeper, then the running one, oldest first", ids(got))
	}
	if len(got[0].Literals) != 0 {
		t.Fatalf("RunnableRuns filled Literals: %s", got[0].Literals)
	}
	if got, _ := s.RunnableRuns(ctx, now, 1); len(got) != 1 {
		t.Fatalf("limit 1 gave %d runs", len(got))
	}
	if got, _ := s.RunnableRuns(ctx, now.Add(2*time.Hour), 0); !containsID(got, "run_sleep_later") {
		t.Fatalf("the later sleeper is not runnable two hours on: %v", ids(got))
	}
	n, err := s.CountPending(ctx)
	if err != nil || n != 4 {
		t.Fatalf("CountPending = %d, %v; want 4 (queued, running, two sleepers)", n, err)
	}
}

// startAsk starts an ask step on a claimed run and parks it on question qid.
func startAsk(t *testing.T, s store.Store, id, claim, qid string) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.StartStep(ctx, store.StepStart{RunID: id, Claim: claim, Path: "ask", Position: 1, Kind: "ask", PID: 4242}); err != nil {
		t.Fatal(err)
	}
	q := &store.Question{ID: qid, Text: "Go on?", Choices: []string{"yes", "no"}, Kind: "ask", Step: "ask", Position: 1, AskedAt: t0}
	if _, err := s.ParkRun(ctx, store.ParkParams{ID: id, Claim: claim, Question: q}); err != nil {
		t.Fatal(err)
	}
}

func testClaim(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := mustCreate(t, s, &store.Run{ID: "run_c"})
	c, err := s.ClaimRun(ctx, store.ClaimParams{ID: r.ID, Claim: "first", PID: 11, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if c.PrevStatus != store.RunQueued || c.PrevOwnerPID != 0 || c.Run.Status != store.RunRunning || c.Run.OwnerPID != 11 || c.Run.Claim != "first" || c.Run.Revision != 2 || c.Run.StartedAt.IsZero() {
		t.Fatalf("first claim: %+v / %+v", c, c.Run)
	}
	// A second claim (the first owner died) replaces the first.
	c2, err := s.ClaimRun(ctx, store.ClaimParams{ID: r.ID, Claim: "second", PID: 22, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if c2.PrevStatus != store.RunRunning || c2.PrevOwnerPID != 11 || c2.Run.OwnerPID != 22 || !c2.Run.StartedAt.Equal(c.Run.StartedAt) {
		t.Fatalf("second claim: %+v / %+v", c2, c2.Run)
	}
	if _, err := s.StartStep(ctx, store.StepStart{RunID: r.ID, Claim: "first", Path: "a", Position: 1, Kind: "exec"}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("the replaced owner wrote the ledger: %v, want ErrNotOwner", err)
	}
	if _, err := s.ClaimRun(ctx, store.ClaimParams{ID: r.ID, Claim: "", PID: 1, Now: time.Now()}); err == nil {
		t.Fatal("an empty claim token was accepted")
	}
	if _, err := s.ClaimRun(ctx, store.ClaimParams{ID: "run_missing", Claim: "x", Now: time.Now()}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claim of a missing run: %v", err)
	}
	// A run waiting on a question is not claimable; nor is a settled one.
	startAsk(t, s, r.ID, "second", "q1")
	var se *store.RunStateError
	if _, err := s.ClaimRun(ctx, store.ClaimParams{ID: r.ID, Claim: "third", PID: 33, Now: time.Now()}); !errors.As(err, &se) || se.Status != store.RunWaiting {
		t.Fatalf("claim of a run waiting on a question: %v, want *RunStateError", err)
	}
	// A question with a deadline makes the run claimable once it passed,
	// and the claim closes the question.
	r2 := mustCreate(t, s, &store.Run{ID: "run_c2"})
	mustClaim(t, s, r2.ID, "a")
	if _, err := s.StartStep(ctx, store.StepStart{RunID: r2.ID, Claim: "a", Path: "ask", Position: 1, Kind: "ask"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	q := &store.Question{ID: "q2", Text: "?", Kind: "ask", Step: "ask", Position: 1, Deadline: deadline}
	if _, err := s.ParkRun(ctx, store.ParkParams{ID: r2.ID, Claim: "a", Question: q, WakeAt: deadline}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimRun(ctx, store.ClaimParams{ID: r2.ID, Claim: "b", Now: time.Now()}); !errors.As(err, &se) {
		t.Fatalf("claim before the deadline: %v", err)
	}
	c3, err := s.ClaimRun(ctx, store.ClaimParams{ID: r2.ID, Claim: "b", PID: 5, Now: deadline.Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if c3.PrevStatus != store.RunWaiting || c3.Run.Question != nil || !c3.Run.WakeAt.IsZero() || c3.Run.Status != store.RunRunning {
		t.Fatalf("claim after the deadline: %+v", c3.Run)
	}
}

func testLedger(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := mustCreate(t, s, &store.Run{ID: "run_l"})
	if l, err := s.Ledger(ctx, r.ID); err != nil || len(l) != 0 {
		t.Fatalf("empty ledger: %v %v", l, err)
	}
	if _, err := s.Ledger(ctx, "run_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ledger of a missing run: %v", err)
	}
	var se *store.RunStateError
	if _, err := s.StartStep(ctx, store.StepStart{RunID: r.ID, Claim: "c", Path: "a", Position: 1, Kind: "exec"}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("start on an unclaimed run: %v, want ErrNotOwner", err)
	}
	before := mustClaim(t, s, r.ID, "c")
	e, err := s.StartStep(ctx, store.StepStart{RunID: r.ID, Claim: "c", Path: "a", Position: 1, Kind: "sleep", PID: 7, Detail: json.RawMessage(`{"until":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if e.State != store.StepStarted || e.Starts != 1 || e.Seq != 1 || e.OwnerPID != 7 || string(e.Detail) != `{"until":1}` || e.StartedAt.IsZero() {
		t.Fatalf("started entry: %+v", e)
	}
	if got, _ := s.GetRun(ctx, r.ID); got.Revision <= before.Revision {
		t.Fatalf("a ledger write did not move the run's revision (%d -> %d)", before.Revision, got.Revision)
	}
	// Starting again (a re-run after a crash) counts the start.
	e, err = s.StartStep(ctx, store.StepStart{RunID: r.ID, Claim: "c", Path: "a", Position: 1, Kind: "sleep", Detail: json.RawMessage(`{"until":1}`)})
	if err != nil || e.Starts != 2 || e.Seq != 1 {
		t.Fatalf("restart: %+v %v", e, err)
	}
	e, err = s.FinishStep(ctx, store.StepFinish{RunID: r.ID, Claim: "c", Path: "a", Position: 1, Status: "succeeded", Result: json.RawMessage(`{"ok":true}`)})
	if err != nil || e.State != store.StepFinished || e.Status != "succeeded" || string(e.Result) != `{"ok":true}` || e.FinishedAt.IsZero() || e.Kind != "sleep" {
		t.Fatalf("finished entry: %+v %v", e, err)
	}
	if _, err := s.FinishStep(ctx, store.StepFinish{RunID: r.ID, Claim: "c", Path: "a", Position: 1, Status: "failed"}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("finishing a finished call again: %v, want ErrExists", err)
	}
	if _, err := s.StartStep(ctx, store.StepStart{RunID: r.ID, Claim: "c", Path: "a", Position: 1, Kind: "sleep"}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("starting a finished call again: %v, want ErrExists", err)
	}
	// A call that never started (a skipped step) is recorded by its finish.
	e, err = s.FinishStep(ctx, store.StepFinish{RunID: r.ID, Claim: "c", Path: "b", Position: 1, Kind: "exec", Status: "skipped"})
	if err != nil || e.Seq != 2 || e.Kind != "exec" || e.Starts != 0 {
		t.Fatalf("finish without start: %+v %v", e, err)
	}
	if _, err := s.StartStep(ctx, store.StepStart{RunID: r.ID, Claim: "c", Path: "a", Position: 2, Kind: "sleep"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartStep(ctx, store.StepStart{RunID: r.ID, Claim: "c", Path: "", Position: 1, Kind: "exec"}); err == nil {
		t.Fatal("an empty step path was accepted")
	}
	if _, err := s.StartStep(ctx, store.StepStart{RunID: r.ID, Claim: "c", Path: "x", Position: 0, Kind: "exec"}); err == nil {
		t.Fatal("position 0 was accepted")
	}
	l, err := s.Ledger(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range l {
		got = append(got, fmt.Sprintf("%s/%d:%s", e.Path, e.Position, e.State))
	}
	if fmt.Sprint(got) != "[a/1:finished b/1:finished a/2:started]" {
		t.Fatalf("ledger = %v", got)
	}
	// Callers never share memory with the store.
	l[0].Result[0] = 'X'
	if l2, _ := s.Ledger(ctx, r.ID); string(l2[0].Result) != `{"ok":true}` {
		t.Fatalf("changing a returned entry changed the store: %s", l2[0].Result)
	}
	// Only a running run's ledger is written.
	if _, err := s.SettleRun(ctx, store.SettleParams{ID: r.ID, Claim: "c", Status: store.RunFailed}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FinishStep(ctx, store.StepFinish{RunID: r.ID, Claim: "c", Path: "a", Position: 2, Status: "failed"}); !errors.Is(err, store.ErrNotOwner) && !errors.As(err, &se) {
		t.Fatalf("ledger write on a settled run: %v", err)
	}
}

func testParkAnswer(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := mustCreate(t, s, &store.Run{ID: "run_p"})
	var se *store.RunStateError
	if _, err := s.AnswerRun(ctx, store.AnswerParams{ID: r.ID, QuestionID: "q", Answer: "yes"}); !errors.As(err, &se) || err.Error() != "run run_p is not waiting (status: queued)" {
		t.Fatalf("answer of a queued run: %v", err)
	}
	mustClaim(t, s, r.ID, "c")
	if _, err := s.ParkRun(ctx, store.ParkParams{ID: r.ID, Claim: "other", WakeAt: time.Now()}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("park by a non-owner: %v", err)
	}
	if _, err := s.ParkRun(ctx, store.ParkParams{ID: r.ID, Claim: "c"}); err == nil {
		t.Fatal("a park without question or wake time was accepted")
	}
	startAsk(t, s, r.ID, "c", "q1")
	got, err := s.GetRun(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.RunWaiting || got.Question == nil || got.Question.ID != "q1" || got.Question.Text != "Go on?" || fmt.Sprint(got.Question.Choices) != "[yes no]" || got.OwnerPID != 0 || got.Claim != "" {
		t.Fatalf("parked run: %+v (question %+v)", got, got.Question)
	}
	if _, err := s.StartStep(ctx, store.StepStart{RunID: r.ID, Claim: "c", Path: "z", Position: 1, Kind: "exec"}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("the parked owner still writes: %v", err)
	}
	if _, err := s.AnswerRun(ctx, store.AnswerParams{ID: r.ID, QuestionID: "q0", Answer: "yes"}); !errors.Is(err, store.ErrStale) {
		t.Fatalf("answer to another question: %v, want ErrStale", err)
	}
	a, err := s.AnswerRun(ctx, store.AnswerParams{ID: r.ID, QuestionID: "q1", Answer: "yes"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != store.RunRunning || a.Question != nil || a.OwnerPID != 0 || a.Revision <= got.Revision {
		t.Fatalf("answered run: %+v", a)
	}
	l, _ := s.Ledger(ctx, r.ID)
	if len(l) != 1 || l[0].Answer == nil || *l[0].Answer != "yes" || l[0].State != store.StepStarted {
		t.Fatalf("ledger after the answer: %+v", l)
	}
	if _, err := s.AnswerRun(ctx, store.AnswerParams{ID: r.ID, QuestionID: "q1", Answer: "no"}); !errors.As(err, &se) || se.Status != store.RunRunning {
		t.Fatalf("second answer: %v, want *RunStateError", err)
	}
	if _, err := s.AnswerRun(ctx, store.AnswerParams{ID: "run_missing", QuestionID: "q"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("answer of a missing run: %v", err)
	}
	// A sleeping run is waiting but has no question.
	c := mustClaim(t, s, r.ID, "d")
	if _, err := s.ParkRun(ctx, store.ParkParams{ID: c.ID, Claim: "d", WakeAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AnswerRun(ctx, store.AnswerParams{ID: r.ID, QuestionID: "q1", Answer: "yes"}); !errors.As(err, &se) || se.Status != store.RunWaiting {
		t.Fatalf("answer of a sleeping run: %v", err)
	}
}

func testSettleRelease(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := mustCreate(t, s, &store.Run{ID: "run_s"})
	mustClaim(t, s, r.ID, "c")
	rel, err := s.ReleaseRun(ctx, r.ID, "c")
	if err != nil || rel.Status != store.RunRunning || rel.OwnerPID != 0 || rel.Claim != "" {
		t.Fatalf("release: %+v %v", rel, err)
	}
	if _, err := s.SettleRun(ctx, store.SettleParams{ID: r.ID, Claim: "c", Status: store.RunSucceeded}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("settle after release: %v, want ErrNotOwner", err)
	}
	mustClaim(t, s, r.ID, "d")
	if _, err := s.SettleRun(ctx, store.SettleParams{ID: r.ID, Claim: "d", Status: store.RunWaiting}); err == nil {
		t.Fatal("settling as waiting was accepted")
	}
	done, err := s.SettleRun(ctx, store.SettleParams{ID: r.ID, Claim: "d", Status: store.RunSucceeded, Result: json.RawMessage(`"hi"`)})
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != store.RunSucceeded || string(done.Result) != `"hi"` || done.FinishedAt.IsZero() || done.Claim != "" {
		t.Fatalf("settled: %+v", done)
	}
	var se *store.RunStateError
	if _, err := s.ClaimRun(ctx, store.ClaimParams{ID: r.ID, Claim: "e", Now: time.Now()}); !errors.As(err, &se) || se.Status != store.RunSucceeded {
		t.Fatalf("claim of a settled run: %v", err)
	}
	got, _ := s.GetRun(ctx, r.ID)
	if got.Status != store.RunSucceeded || string(got.Result) != `"hi"` {
		t.Fatalf("stored: %+v", got)
	}
	f := mustCreate(t, s, &store.Run{ID: "run_f"})
	mustClaim(t, s, f.ID, "c")
	failed, err := s.SettleRun(ctx, store.SettleParams{ID: f.ID, Claim: "c", Status: store.RunFailed, Error: "step x: exit status 1"})
	if err != nil || failed.Error != "step x: exit status 1" || len(failed.Result) != 0 {
		t.Fatalf("failed: %+v %v", failed, err)
	}
}

func testCancel(t *testing.T, s store.Store) {
	ctx := context.Background()
	q := mustCreate(t, s, &store.Run{ID: "run_q"})
	c, err := s.CancelRun(ctx, q.ID, "cancelled by test")
	if err != nil || c.Status != store.RunCancelled || c.Error != "cancelled by test" || c.FinishedAt.IsZero() {
		t.Fatalf("cancel queued: %+v %v", c, err)
	}
	var se *store.RunStateError
	if _, err := s.CancelRun(ctx, q.ID, ""); !errors.As(err, &se) || err.Error() != "run run_q is already cancelled" {
		t.Fatalf("second cancel: %v", err)
	}
	w := mustCreate(t, s, &store.Run{ID: "run_w"})
	mustClaim(t, s, w.ID, "c")
	startAsk(t, s, w.ID, "c", "q1")
	c, err = s.CancelRun(ctx, w.ID, "no")
	if err != nil || c.Status != store.RunCancelled || c.Question != nil {
		t.Fatalf("cancel waiting: %+v %v", c, err)
	}
	if _, err := s.AnswerRun(ctx, store.AnswerParams{ID: w.ID, QuestionID: "q1", Answer: "yes"}); !errors.As(err, &se) || err.Error() != "run run_w is not waiting (status: cancelled)" {
		t.Fatalf("answer after cancel: %v", err)
	}
	r := mustCreate(t, s, &store.Run{ID: "run_r"})
	mustClaim(t, s, r.ID, "c")
	c, err = s.CancelRun(ctx, r.ID, "stop")
	if err != nil || c.Status != store.RunRunning || !c.CancelRequested || c.Claim != "c" {
		t.Fatalf("cancel running: %+v %v", c, err)
	}
	if _, err := s.ParkRun(ctx, store.ParkParams{ID: r.ID, Claim: "c", WakeAt: time.Now().Add(time.Hour)}); !errors.Is(err, store.ErrCancelRequested) {
		t.Fatalf("parking a run whose cancel was requested: %v, want ErrCancelRequested", err)
	}
	if _, err := s.SettleRun(ctx, store.SettleParams{ID: r.ID, Claim: "c", Status: store.RunCancelled, Error: "stop"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CancelRun(ctx, "run_missing", ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cancel of a missing run: %v", err)
	}
}

func testSettleLedger(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := mustCreate(t, s, &store.Run{ID: "run_l"})
	mustClaim(t, s, r.ID, "c")
	if _, err := s.StartStep(ctx, store.StepStart{RunID: r.ID, Claim: "c", Path: "first", Position: 1, Kind: "exec", PID: 7}); err != nil {
		t.Fatal(err)
	}
	journal := []byte(`{"type":"start"}` + "\n" + `{"type":"end"}` + "\n")
	done, err := s.SettleRun(ctx, store.SettleParams{ID: r.ID, Claim: "c", Status: store.RunSucceeded, Journal: journal, Ledger: []store.StepFinish{
		{Path: "first", Position: 1, Status: "succeeded", Result: json.RawMessage(`{"stdout":"x"}`)},
		{Path: "skipped", Position: 1, Kind: "exec", Status: "skipped"},
	}})
	if err != nil || done.Status != store.RunSucceeded || done.Revision != 4 {
		t.Fatalf("settle with ledger: %+v %v", done, err)
	}
	led, err := s.Ledger(ctx, r.ID)
	if err != nil || len(led) != 2 {
		t.Fatalf("ledger: %+v %v", led, err)
	}
	if e := led[0]; e.Path != "first" || e.State != store.StepFinished || e.Status != "succeeded" || string(e.Result) != `{"stdout":"x"}` || e.Starts != 1 || e.Seq != 1 {
		t.Fatalf("finished call: %+v", e)
	}
	if e := led[1]; e.Path != "skipped" || e.State != store.StepFinished || e.Status != "skipped" || e.Kind != "exec" || e.Starts != 0 || e.Seq != 2 || e.RunID != r.ID {
		t.Fatalf("skipped call: %+v", e)
	}
	// The journal is kept with the run; only GetRun returns it.
	if got, err := s.GetRun(ctx, r.ID); err != nil || string(got.Journal) != string(journal) {
		t.Fatalf("GetRun journal %q, %v; want %q", got.Journal, err, journal)
	}
	if list, _, err := s.ListRuns(ctx, store.RunFilter{}); err != nil || len(list) != 1 || list[0].Journal != nil {
		t.Fatalf("ListRuns: %+v %v", list, err)
	}

	// Outcomes ride with a start too, and a refused one refuses it.
	g := mustCreate(t, s, &store.Run{ID: "run_g"})
	mustClaim(t, s, g.ID, "c")
	if _, err := s.StartStep(ctx, store.StepStart{RunID: g.ID, Claim: "c", Path: "one", Position: 1, Kind: "exec"}); err != nil {
		t.Fatal(err)
	}
	two, err := s.StartStep(ctx, store.StepStart{RunID: g.ID, Claim: "c", Path: "two", Position: 1, Kind: "shell", PID: 9, Ledger: []store.StepFinish{
		{Path: "one", Position: 1, Status: "succeeded", Result: json.RawMessage(`{"stdout":"1"}`)},
		{Path: "skip", Position: 1, Kind: "exec", Status: "skipped"},
	}})
	if err != nil || two.State != store.StepStarted || two.Seq != 3 || two.Starts != 1 {
		t.Fatalf("start with outcomes: %+v %v", two, err)
	}
	if _, err := s.StartStep(ctx, store.StepStart{RunID: g.ID, Claim: "c", Path: "three", Position: 1, Kind: "exec", Ledger: []store.StepFinish{
		{Path: "x", Position: 1, Status: "skipped"}, {Path: "x", Position: 1, Status: "skipped"},
	}}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("start with an outcome twice: %v, want ErrExists", err)
	}
	if _, err := s.StartStep(ctx, store.StepStart{RunID: g.ID, Claim: "c", Path: "four", Position: 1, Kind: "exec", Ledger: []store.StepFinish{
		{Path: "four", Position: 1, Status: "skipped"},
	}}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("start of a call finished in the same operation: %v, want ErrExists", err)
	}
	led, _ = s.Ledger(ctx, g.ID)
	if len(led) != 3 || led[0].Path != "one" || led[0].State != store.StepFinished || string(led[0].Result) != `{"stdout":"1"}` || led[1].Path != "skip" || led[2].Path != "two" {
		t.Fatalf("ledger after starts with outcomes: %+v", led)
	}

	// A refused outcome refuses the settle: nothing is written.
	f := mustCreate(t, s, &store.Run{ID: "run_m"})
	mustClaim(t, s, f.ID, "c")
	if _, err := s.FinishStep(ctx, store.StepFinish{RunID: f.ID, Claim: "c", Path: "done", Position: 1, Kind: "exec", Status: "succeeded"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]store.StepFinish{
		{{Path: "new", Position: 1, Status: "skipped"}, {Path: "done", Position: 1, Status: "failed"}},
		{{Path: "twice", Position: 1, Status: "skipped"}, {Path: "twice", Position: 1, Status: "skipped"}},
	} {
		if _, err := s.SettleRun(ctx, store.SettleParams{ID: f.ID, Claim: "c", Status: store.RunFailed, Ledger: bad}); !errors.Is(err, store.ErrExists) {
			t.Fatalf("settle with a recorded outcome again: %v, want ErrExists", err)
		}
	}
	if _, err := s.SettleRun(ctx, store.SettleParams{ID: f.ID, Claim: "c", Status: store.RunFailed, Ledger: []store.StepFinish{{Path: "", Position: 1}}}); err == nil {
		t.Fatal("settle with a bad call was accepted")
	}
	got, _ := s.GetRun(ctx, f.ID)
	led, _ = s.Ledger(ctx, f.ID)
	if got.Status != store.RunRunning || got.Claim != "c" || len(led) != 1 {
		t.Fatalf("a refused settle wrote: %+v, ledger %+v", got, led)
	}
	if _, err := s.SettleRun(ctx, store.SettleParams{ID: f.ID, Claim: "other", Status: store.RunFailed, Ledger: []store.StepFinish{{Path: "x", Position: 1, Status: "skipped"}}}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("settle by a non-owner: %v, want ErrNotOwner", err)
	}
}

func testRunClaims(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreate(t, s, &store.Run{ID: "run_a"})
	mustClaim(t, s, "run_a", "ca")
	mustCreate(t, s, &store.Run{ID: "run_b"})
	mustClaim(t, s, "run_b", "cb")
	if _, err := s.CancelRun(ctx, "run_b", "stop"); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, &store.Run{ID: "run_q"})
	got, err := s.RunClaims(ctx, []string{"run_q", "run_missing", "run_b", "run_a"})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]store.RunClaim{}
	for _, c := range got {
		byID[c.ID] = c
	}
	want := map[string]store.RunClaim{
		"run_a": {ID: "run_a", Status: store.RunRunning, Claim: "ca"},
		"run_b": {ID: "run_b", Status: store.RunRunning, Claim: "cb", CancelRequested: true},
		"run_q": {ID: "run_q", Status: store.RunQueued},
	}
	if len(got) != len(want) || fmt.Sprint(byID) != fmt.Sprint(want) {
		t.Fatalf("RunClaims = %+v, want %+v", got, want)
	}
	if got, err := s.RunClaims(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("RunClaims(nil) = %+v, %v", got, err)
	}
}

func testChangedRuns(t *testing.T, s store.Store) {
	ctx := context.Background()
	start, err := s.LastRunChange(ctx)
	if err != nil || start != 0 {
		t.Fatalf("LastRunChange of an empty store = %d, %v; want 0", start, err)
	}
	mustCreate(t, s, &store.Run{ID: "run_a"})
	mustCreate(t, s, &store.Run{ID: "run_b"})
	mustClaim(t, s, "run_a", "c")
	got, err := s.ChangedRuns(ctx, 0, 0)
	if err != nil || len(got) != 2 {
		t.Fatalf("ChangedRuns = %+v, %v; want both runs", got, err)
	}
	// In change order, each run once with its latest change.
	if got[0].ID != "run_b" || got[0].Revision != 1 || got[1].ID != "run_a" || got[1].Revision != 2 || got[0].Seq >= got[1].Seq {
		t.Fatalf("ChangedRuns = %+v, want run_b (rev 1) then run_a (rev 2)", got)
	}
	last, err := s.LastRunChange(ctx)
	if err != nil || last != got[1].Seq {
		t.Fatalf("LastRunChange = %d, %v; want %d", last, err, got[1].Seq)
	}
	if got, _ := s.ChangedRuns(ctx, last, 0); len(got) != 0 {
		t.Fatalf("changes after the last one: %+v", got)
	}
	// A poller that passes the last number it saw sees each later change.
	if _, err := s.SettleRun(ctx, store.SettleParams{ID: "run_a", Claim: "c", Status: store.RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CancelRun(ctx, "run_b", "stop"); err != nil {
		t.Fatal(err)
	}
	got, err = s.ChangedRuns(ctx, last, 1)
	if err != nil || len(got) != 1 || got[0].ID != "run_a" || got[0].Revision != 3 || got[0].Seq <= last {
		t.Fatalf("ChangedRuns after %d, limit 1 = %+v, %v; want run_a (rev 3)", last, got, err)
	}
	got, err = s.ChangedRuns(ctx, got[0].Seq, 0)
	if err != nil || len(got) != 1 || got[0].ID != "run_b" || got[0].Revision != 2 {
		t.Fatalf("ChangedRuns, next page = %+v, %v; want run_b (rev 2)", got, err)
	}
}
