package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/store"
)

func TestAskAnswerAndLaterStepsSeeIt(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"hello.yaml": helloYAML})
	r := te.launch("hello", `{"who": "Ada"}`)
	parked := te.wait(te.e, r.ID)
	if parked.Status != store.RunWaiting || parked.Question == nil || parked.Question.Text != "Go on, Ada?" || fmt.Sprint(parked.Question.Choices) != "[yes no]" {
		t.Fatalf("parked: %+v %+v", parked.Run, parked.Question)
	}
	if got := stepStatuses(parked); got != "greet=succeeded confirm=waiting write=pending nap=pending" {
		t.Fatalf("steps while parked: %s", got)
	}
	// Parked runs hold no goroutine (the execution may still be unwinding).
	waitIdle(t, te.e)
	var ae *AnswerError
	if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: r.ID, Answer: "maybe"}); !errors.As(err, &ae) || !strings.Contains(err.Error(), `"maybe" is not one of the choices: "yes", "no"`) {
		t.Fatalf("answer outside the choices: %v", err)
	}
	if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: r.ID, QuestionID: "q_old", Answer: "yes"}); err == nil {
		t.Fatal("an answer to another question was accepted")
	}
	// A second engine (a peer) answers; this engine's peer loop resumes it.
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	a, err := te.engine().Answer(te.ctx, AnswerParams{RunID: r.ID, QuestionID: parked.Question.ID, Answer: "yes"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != store.RunRunning && !a.Status.Settled() {
		t.Fatalf("after the answer: %s", a.Status)
	}
	done := te.wait(te.e, r.ID)
	if done.Status != store.RunSucceeded || string(done.Result) != `"hello Ada"` {
		t.Fatalf("done: %s %s %s", done.Status, done.Result, done.Error)
	}
	if got := te.read("out.txt"); got != "yes from hello Ada\n" {
		t.Fatalf("out.txt = %q", got)
	}
	if *done.Steps[1].Answer != "yes" {
		t.Fatalf("confirm step: %+v", done.Steps[1])
	}
	_, err = te.e.Answer(te.ctx, AnswerParams{RunID: r.ID, Answer: "yes"})
	var se *StateError
	if !errors.As(err, &se) || err.Error() != fmt.Sprintf("run %s is not waiting (status: succeeded)", r.ID) {
		t.Fatalf("answer of a settled run: %v", err)
	}
	var types []string
	for _, rec := range te.records(te.e, r.ID) {
		types = append(types, rec.Type)
	}
	if got := strings.Join(types, " "); !strings.HasPrefix(got, "start ") || !strings.Contains(got, " question answer note ") || !strings.HasSuffix(got, " end") {
		t.Fatalf("journal record types: %s", got)
	}
}

func TestDurableSleepParksAndWakes(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Now())
	te := setup(t, map[string]string{"nap.yaml": "steps:\n  - id: nap\n    sleep: 300ms\n  - id: after\n    exec: [\"true\"]\n"},
		func(o *Options) { o.ParkSleepsOver = 50 * time.Millisecond; o.Clock = clk })
	r := te.launch("nap", "")
	// Parked on the sleep: waiting with a wake time, no question.
	var got *store.Run
	waitFor(t, te.e, "parked", func() bool {
		var err error
		if got, err = te.st.GetRun(te.ctx, r.ID); err != nil {
			t.Fatal(err)
		}
		return got.Status != store.RunQueued && got.Status != store.RunRunning
	})
	if got.Status != store.RunWaiting || got.Question != nil || got.WakeAt.IsZero() {
		t.Fatalf("sleeping run: %+v", got)
	}
	if busy, _ := te.e.Busy(te.ctx); !busy {
		t.Fatal("a run sleeping durably does not keep peers busy")
	}
	// Past the wake time, a peer's first pass resumes the run.
	clk.Advance(300 * time.Millisecond)
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	done := te.wait(te.e, r.ID)
	if done.Status != store.RunSucceeded || done.Steps[0].Until.IsZero() {
		t.Fatalf("after the sleep: %s %+v", done.Status, done.Steps)
	}
	waitIdle(t, te.e)
	if busy, _ := te.e.Busy(te.ctx); busy {
		t.Fatal("busy with nothing to do")
	}
}

func TestAskTimeoutUsesTheDefault(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Now())
	te := setup(t, map[string]string{
		"timed.yaml":  "steps:\n  - id: q\n    ask: \"Deploy?\"\n    choices: [\"yes\", \"no\"]\n    timeout: 200ms\n    default: \"no\"\nresult: ${{ steps.q.answer }}\n",
		"strict.yaml": "steps:\n  - id: q\n    ask: \"Deploy?\"\n    timeout: 200ms\n",
	}, func(o *Options) { o.Clock = clk })
	timed, strict := te.launch("timed", "").ID, te.launch("strict", "").ID
	for _, id := range []string{timed, strict} {
		p := te.wait(te.e, id)
		if p.Status != store.RunWaiting || p.Question == nil || p.Question.Deadline.IsZero() || p.WakeAt.IsZero() {
			t.Fatalf("parked: %+v", p.Run)
		}
	}
	// Past the deadline, a peer's first pass resumes both.
	clk.Advance(200 * time.Millisecond)
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(te.ctx, 60*time.Second)
	defer cancel()
	done, err := te.e.Watch(ctx, timed, WatchParams{})
	if err != nil || done.Status != store.RunSucceeded || string(done.Result) != `"no"` {
		t.Fatalf("after the timeout: %+v %v", done, err)
	}
	failed, err := te.e.Watch(ctx, strict, WatchParams{})
	if err != nil || failed.Status != store.RunFailed || failed.Error != "step q: no answer within 200ms" {
		t.Fatalf("no default: %+v %v", failed, err)
	}
}
