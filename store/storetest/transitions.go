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

// Run transition cases: claims, parking and answers, settles, releases
// and cancels, as each backend stores them.

// startAsk starts an ask step on a claimed run and parks it on question qid.
func startAsk(t *testing.T, s store.Store, id, claim, qid string) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.StartStep(ctx, store.StepStart{Now: tNow, RunID: id, Claim: claim, Path: "ask", Position: 1, Kind: "ask", PID: 4242}); err != nil {
		t.Fatal(err)
	}
	q := &store.Question{ID: qid, Text: "Go on?", Choices: []string{"yes", "no"}, Kind: "ask", Step: "ask", Position: 1, AskedAt: t0}
	if _, err := s.ParkRun(ctx, store.ParkParams{Now: tNow, ID: id, Claim: claim, Question: q}); err != nil {
		t.Fatal(err)
	}
}

func testClaim(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := mustCreate(t, s, &store.Run{ID: "run_c"})
	c, err := s.ClaimRun(ctx, store.ClaimParams{ID: r.ID, Claim: "first", PID: 11, Now: tNow})
	if err != nil {
		t.Fatal(err)
	}
	if c.PrevStatus != store.RunQueued || c.PrevOwnerPID != 0 || c.Run.Status != store.RunRunning || c.Run.OwnerPID != 11 || c.Run.Claim != "first" || c.Run.Revision != 2 || !c.Run.StartedAt.Equal(tNow) || !c.Run.UpdatedAt.Equal(tNow) {
		t.Fatalf("first claim: %+v / %+v", c, c.Run)
	}
	// A second claim (the first owner died) replaces the first.
	c2, err := s.ClaimRun(ctx, store.ClaimParams{ID: r.ID, Claim: "second", PID: 22, Now: tNow})
	if err != nil {
		t.Fatal(err)
	}
	if c2.PrevStatus != store.RunRunning || c2.PrevOwnerPID != 11 || c2.Run.OwnerPID != 22 || !c2.Run.StartedAt.Equal(c.Run.StartedAt) {
		t.Fatalf("second claim: %+v / %+v", c2, c2.Run)
	}
	if _, err := s.StartStep(ctx, store.StepStart{Now: tNow, RunID: r.ID, Claim: "first", Path: "a", Position: 1, Kind: "exec"}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("the replaced owner wrote the ledger: %v, want ErrNotOwner", err)
	}
	if _, err := s.ClaimRun(ctx, store.ClaimParams{ID: r.ID, Claim: "", PID: 1, Now: tNow}); err == nil {
		t.Fatal("an empty claim token was accepted")
	}
	if _, err := s.ClaimRun(ctx, store.ClaimParams{ID: "run_missing", Claim: "x", Now: tNow}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claim of a missing run: %v", err)
	}
	// A run waiting on a question is not claimable; nor is a settled one.
	startAsk(t, s, r.ID, "second", "q1")
	var se *store.RunStateError
	if _, err := s.ClaimRun(ctx, store.ClaimParams{ID: r.ID, Claim: "third", PID: 33, Now: tNow}); !errors.As(err, &se) || se.Status != store.RunWaiting {
		t.Fatalf("claim of a run waiting on a question: %v, want *RunStateError", err)
	}
	// A question with a deadline makes the run claimable once it passed,
	// and the claim closes the question.
	r2 := mustCreate(t, s, &store.Run{ID: "run_c2"})
	mustClaim(t, s, r2.ID, "a")
	if _, err := s.StartStep(ctx, store.StepStart{Now: tNow, RunID: r2.ID, Claim: "a", Path: "ask", Position: 1, Kind: "ask"}); err != nil {
		t.Fatal(err)
	}
	deadline := tNow.Add(time.Minute)
	q := &store.Question{ID: "q2", Text: "?", Kind: "ask", Step: "ask", Position: 1, Deadline: deadline}
	if _, err := s.ParkRun(ctx, store.ParkParams{Now: tNow, ID: r2.ID, Claim: "a", Question: q, WakeAt: deadline}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimRun(ctx, store.ClaimParams{ID: r2.ID, Claim: "b", Now: tNow}); !errors.As(err, &se) {
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

func testParkAnswer(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := mustCreate(t, s, &store.Run{ID: "run_p"})
	var se *store.RunStateError
	if _, err := s.AnswerRun(ctx, store.AnswerParams{Now: tNow, ID: r.ID, QuestionID: "q", Answer: "yes"}); !errors.As(err, &se) || err.Error() != "run run_p is not waiting (status: queued)" {
		t.Fatalf("answer of a queued run: %v", err)
	}
	mustClaim(t, s, r.ID, "c")
	if _, err := s.ParkRun(ctx, store.ParkParams{Now: tNow, ID: r.ID, Claim: "other", WakeAt: tNow}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("park by a non-owner: %v", err)
	}
	if _, err := s.ParkRun(ctx, store.ParkParams{Now: tNow, ID: r.ID, Claim: "c"}); err == nil {
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
	if _, err := s.StartStep(ctx, store.StepStart{Now: tNow, RunID: r.ID, Claim: "c", Path: "z", Position: 1, Kind: "exec"}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("the parked owner still writes: %v", err)
	}
	if _, err := s.AnswerRun(ctx, store.AnswerParams{Now: tNow, ID: r.ID, QuestionID: "q0", Answer: "yes"}); !errors.Is(err, store.ErrStale) {
		t.Fatalf("answer to another question: %v, want ErrStale", err)
	}
	a, err := s.AnswerRun(ctx, store.AnswerParams{Now: tNow, ID: r.ID, QuestionID: "q1", Answer: "yes"})
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
	if _, err := s.AnswerRun(ctx, store.AnswerParams{Now: tNow, ID: r.ID, QuestionID: "q1", Answer: "no"}); !errors.As(err, &se) || se.Status != store.RunRunning {
		t.Fatalf("second answer: %v, want *RunStateError", err)
	}
	if _, err := s.AnswerRun(ctx, store.AnswerParams{Now: tNow, ID: "run_missing", QuestionID: "q"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("answer of a missing run: %v", err)
	}
	// A sleeping run is waiting but has no question.
	c := mustClaim(t, s, r.ID, "d")
	if _, err := s.ParkRun(ctx, store.ParkParams{Now: tNow, ID: c.ID, Claim: "d", WakeAt: tNow.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AnswerRun(ctx, store.AnswerParams{Now: tNow, ID: r.ID, QuestionID: "q1", Answer: "yes"}); !errors.As(err, &se) || se.Status != store.RunWaiting {
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
	if _, err := s.SettleRun(ctx, store.SettleParams{Now: tNow, ID: r.ID, Claim: "c", Status: store.RunSucceeded}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("settle after release: %v, want ErrNotOwner", err)
	}
	mustClaim(t, s, r.ID, "d")
	if _, err := s.SettleRun(ctx, store.SettleParams{Now: tNow, ID: r.ID, Claim: "d", Status: store.RunWaiting}); err == nil {
		t.Fatal("settling as waiting was accepted")
	}
	settled := tNow.Add(time.Minute)
	done, err := s.SettleRun(ctx, store.SettleParams{Now: settled, ID: r.ID, Claim: "d", Status: store.RunSucceeded, Result: json.RawMessage(`"hi"`)})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetRun(ctx, r.ID); !got.FinishedAt.Equal(settled) || !got.UpdatedAt.Equal(settled) {
		t.Fatalf("settled at %v (updated %v), want the settle's time %v", got.FinishedAt, got.UpdatedAt, settled)
	}
	if done.Status != store.RunSucceeded || string(done.Result) != `"hi"` || done.FinishedAt.IsZero() || done.Claim != "" {
		t.Fatalf("settled: %+v", done)
	}
	var se *store.RunStateError
	if _, err := s.ClaimRun(ctx, store.ClaimParams{ID: r.ID, Claim: "e", Now: tNow}); !errors.As(err, &se) || se.Status != store.RunSucceeded {
		t.Fatalf("claim of a settled run: %v", err)
	}
	got, _ := s.GetRun(ctx, r.ID)
	if got.Status != store.RunSucceeded || string(got.Result) != `"hi"` {
		t.Fatalf("stored: %+v", got)
	}
	f := mustCreate(t, s, &store.Run{ID: "run_f"})
	mustClaim(t, s, f.ID, "c")
	failed, err := s.SettleRun(ctx, store.SettleParams{Now: tNow, ID: f.ID, Claim: "c", Status: store.RunFailed, Error: "step x: exit status 1"})
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
	if _, err := s.AnswerRun(ctx, store.AnswerParams{Now: tNow, ID: w.ID, QuestionID: "q1", Answer: "yes"}); !errors.As(err, &se) || err.Error() != "run run_w is not waiting (status: cancelled)" {
		t.Fatalf("answer after cancel: %v", err)
	}
	r := mustCreate(t, s, &store.Run{ID: "run_r"})
	mustClaim(t, s, r.ID, "c")
	c, err = s.CancelRun(ctx, r.ID, "stop")
	if err != nil || c.Status != store.RunRunning || !c.CancelRequested || c.Claim != "c" {
		t.Fatalf("cancel running: %+v %v", c, err)
	}
	if _, err := s.ParkRun(ctx, store.ParkParams{Now: tNow, ID: r.ID, Claim: "c", WakeAt: tNow.Add(time.Hour)}); !errors.Is(err, store.ErrCancelRequested) {
		t.Fatalf("parking a run whose cancel was requested: %v, want ErrCancelRequested", err)
	}
	if _, err := s.SettleRun(ctx, store.SettleParams{Now: tNow, ID: r.ID, Claim: "c", Status: store.RunCancelled, Error: "stop"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CancelRun(ctx, "run_missing", ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cancel of a missing run: %v", err)
	}
	// With finally steps to run, a waiting run is made runnable instead.
	f := mustCreate(t, s, &store.Run{ID: "run_fin"})
	mustClaim(t, s, f.ID, "c")
	startAsk(t, s, f.ID, "c", "q2")
	c, err = s.CancelToFinish(ctx, f.ID, "stop")
	if err != nil || c.Status != store.RunWaiting || !c.CancelRequested || c.Question != nil || c.WakeAt.IsZero() || !c.Runnable(c.WakeAt) {
		t.Fatalf("cancel to finish a waiting run: %+v %v", c, err)
	}
	if got, err := s.ClaimRun(ctx, store.ClaimParams{ID: f.ID, Claim: "d", Now: c.WakeAt}); err != nil || !got.Run.CancelRequested || got.Run.Status != store.RunRunning {
		t.Fatalf("claim: %+v %v", got, err)
	}
	if _, err := s.AnswerRun(ctx, store.AnswerParams{Now: tNow, ID: f.ID, QuestionID: "q2", Answer: "yes"}); !errors.As(err, &se) {
		t.Fatalf("answer after a cancel: %v", err)
	}
	qf := mustCreate(t, s, &store.Run{ID: "run_fq"})
	if c, err := s.CancelToFinish(ctx, qf.ID, "stop"); err != nil || c.Status != store.RunCancelled {
		t.Fatalf("cancel to finish a queued run: %+v %v", c, err)
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
