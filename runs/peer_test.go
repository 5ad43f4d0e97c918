package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// orphan stores a run as a crashed owner leaves it: running, owner pid
// gone, lock free, with steps started as given.
func orphan(t *testing.T, te *testEnv, target string, started map[string]bool) string {
	t.Helper()
	wf, err := te.e.Targets().Target(target)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := wf.ValidateInput(nil)
	lits, _ := Literals(wf, in)
	id := ids.New("run")
	// Hold the run's lock while setting it up, so no peer adopts it halfway.
	lock, err := te.e.locker.tryLock(id)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	if err := te.st.CreateRun(te.ctx, &store.Run{ID: id, Target: target, Literals: lits}); err != nil {
		t.Fatal(err)
	}
	claim := "dead-claim"
	if _, err := te.st.ClaimRun(te.ctx, store.ClaimParams{ID: id, Claim: claim, PID: 999999999, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, st := range wf.Steps {
		finished, ok := started[st.ID]
		if !ok {
			break
		}
		if _, err := te.st.StartStep(te.ctx, store.StepStart{RunID: id, Claim: claim, Path: st.ID, Position: 1, Kind: string(st.Kind), PID: 999999999}); err != nil {
			t.Fatal(err)
		}
		if finished {
			if _, err := te.st.FinishStep(te.ctx, store.StepFinish{RunID: id, Claim: claim, Path: st.ID, Position: 1, Status: StepSucceeded, Result: json.RawMessage(`{"stdout":"recorded\n"}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return id
}

func TestAdoptionReplaysTheLedger(t *testing.T) {
	t.Parallel()
	const wf = `
steps:
  - id: one
    shell: 'echo one >> out-$CAIRN_RUN_ID'
  - id: two
    shell: 'echo two >> out-$CAIRN_RUN_ID'
  - id: safe
    shell: 'echo safe >> out-$CAIRN_RUN_ID'
    safe_to_repeat: true
  - id: last
    exec: ["sh", "-c", "echo ${{ steps.one.stdout }} >> out-$CAIRN_RUN_ID"]
`
	te := setup(t, map[string]string{"four.yaml": wf})
	cases := []struct {
		name    string
		started map[string]bool
		answer  string // to the ambiguity question; "" when none is expected
		status  store.RunStatus
		lines   string
	}{
		{"finished steps are not run again", map[string]bool{"one": true, "two": true}, "", store.RunSucceeded, "safe\nrecorded\n"},
		{"safe step re-runs", map[string]bool{"one": true, "two": true, "safe": false}, "", store.RunSucceeded, "safe\nrecorded\n"},
		{"unsafe step asks, retry", map[string]bool{"one": true, "two": false}, AnswerRetry, store.RunSucceeded, "two\nsafe\nrecorded\n"},
		{"unsafe step asks, skip", map[string]bool{"one": true, "two": false}, AnswerSkip, store.RunSucceeded, "safe\nrecorded\n"},
		{"unsafe step asks, fail", map[string]bool{"one": false}, AnswerFail, store.RunFailed, ""},
	}
	peer := te.engine()
	if err := peer.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			id := orphan(t, te, "four", c.started)
			r := te.wait(peer, id)
			if c.answer != "" {
				if r.Status != store.RunWaiting || r.Question == nil || r.Question.Kind != "ambiguous" || !strings.HasSuffix(r.Question.Text, "may or may not have run: retry, skip or fail?") {
					t.Fatalf("expected the ambiguity question, got %s %+v", r.Status, r.Question)
				}
				// The question is a person's: an agent's answer is refused
				// and the run still waits.
				var hq *HumanQuestionError
				if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: id, QuestionID: r.Question.ID, Answer: c.answer, By: "agent:editor"}); !errors.As(err, &hq) {
					t.Fatalf("an agent's answer to the ambiguity question: %v; want a *HumanQuestionError", err)
				}
				if w, err := te.e.Get(te.ctx, id); err != nil || w.Status != store.RunWaiting || w.Question == nil || w.Question.ID != r.Question.ID {
					t.Fatalf("after the agent's refused answer: %+v, %v; want the run still waiting on its question", w, err)
				}
				if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: id, QuestionID: r.Question.ID, Answer: c.answer}); err != nil {
					t.Fatal(err)
				}
				r = te.wait(peer, id)
			}
			if r.Status != c.status {
				t.Fatalf("status %s (%s), want %s", r.Status, r.Error, c.status)
			}
			b, _ := os.ReadFile(te.path("out-" + id))
			if string(b) != c.lines {
				t.Fatalf("lines %q, want %q", b, c.lines)
			}
			var resumed bool
			answers := 0
			for _, rec := range te.records(peer, id) {
				if rec.Type == RecordNote && rec.Text == fmt.Sprintf("resumed by pid %d; previous owner pid 999999999 is gone", os.Getpid()) {
					resumed = true
				}
				if rec.Type == RecordAnswer {
					answers++
					if rec.By != "human" || rec.Text != c.answer {
						t.Errorf("answer record %+v; want the person's %q", rec, c.answer)
					}
				}
			}
			if want := map[bool]int{true: 1, false: 0}[c.answer != ""]; answers != want {
				t.Errorf("%d answer records, want %d (the refused one is not recorded)", answers, want)
			}
			if !resumed {
				t.Fatal("the journal does not say who resumed the run")
			}
		})
	}
}

// TestStopReleasesAndPeerReattaches: Stop lets go of a run whose step is
// in flight without stopping the step, which goes on under its
// supervisor; the peer that adopts the run re-attaches to it (no
// question), and a cancel stops it.
func TestStopReleasesAndPeerReattaches(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"long.yaml": "steps:\n  - id: nap\n    exec: [\"sleep\", \"60\"]\n"})
	first := te.engine(func(o *Options) { o.StopGrace = 100 * time.Millisecond })
	r, err := first.Launch(te.ctx, LaunchParams{Target: "long"})
	if err != nil {
		t.Fatal(err)
	}
	pid := waitStepStarted(t, te, first, r.ID, "nap")
	first.Stop()
	if !alive(pid) {
		t.Fatalf("the step's process %d did not survive Stop", pid)
	}
	got, _ := te.st.GetRun(te.ctx, r.ID)
	if got.Status != store.RunRunning || got.OwnerPID != 0 {
		t.Fatalf("released run: %+v", got)
	}
	if _, err := first.Launch(te.ctx, LaunchParams{Target: "long"}); !errors.Is(err, ErrStopped) {
		t.Fatalf("launch after stop: %v", err)
	}
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	waitRecord(t, te, te.e, r.ID, func(rec Record) bool {
		return rec.Type == RecordNote && strings.Contains(rec.Text, "re-attached to step nap")
	})
	if p, _ := te.e.Get(te.ctx, r.ID); p.Status != store.RunRunning || p.Question != nil || !alive(pid) {
		t.Fatalf("after adoption: %s %+v, step process alive %v", p.Status, p.Question, alive(pid))
	}
	if _, err := te.e.Cancel(te.ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	done := te.wait(te.e, r.ID)
	if done.Status != store.RunCancelled || done.Steps[0].Status != StepCancelled || alive(pid) {
		t.Fatalf("after cancel: %s %s, step process alive %v", done.Status, stepStatuses(done), alive(pid))
	}
	for _, rec := range te.records(te.e, r.ID) {
		if rec.Type == RecordStep && rec.Event == "started" && rec.PID != pid {
			t.Fatalf("the step started again: %+v", rec)
		}
	}
}

// TestPeerAsksWhenTheSupervisorDied: a step whose supervisor died
// without a result may or may not have done its work: its command is
// gone with it (parent-death signal), and the adopting peer asks.
func TestPeerAsksWhenTheSupervisorDied(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"long.yaml": "steps:\n  - id: nap\n    exec: [\"sleep\", \"60\"]\n"})
	first := te.engine(func(o *Options) { o.StopGrace = time.Millisecond })
	r, err := first.Launch(te.ctx, LaunchParams{Target: "long"})
	if err != nil {
		t.Fatal(err)
	}
	pid := waitStepStarted(t, te, first, r.ID, "nap")
	first.Stop()
	state, err := readStepState(stepFilePath(te.ws.OutputDir(), r.ID))
	if err != nil || state == nil || state.Command.PID != pid {
		t.Fatalf("step file: %+v %v", state, err)
	}
	if err := syscall.Kill(state.Supervisor.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	p := te.wait(te.e, r.ID)
	if p.Status != store.RunWaiting || p.Question == nil || p.Question.Step != "nap" || p.Question.Kind != "ambiguous" {
		t.Fatalf("after adoption: %s %+v", p.Status, p.Question)
	}
	if alive(pid) {
		t.Fatalf("the step's process %d outlived its supervisor", pid)
	}
	c, err := te.e.Cancel(te.ctx, r.ID)
	if err != nil || c.Status != store.RunCancelled {
		t.Fatalf("cancel: %v %v", c, err)
	}
}

func TestOwnerGoneIsReported(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"four.yaml": "steps:\n  - id: one\n    exec: [\"true\"]\n"})
	id := orphan(t, te, "four", map[string]bool{"one": false})
	// An engine whose clock is an hour ahead sees the run untouched for
	// long enough; it never executes anything here.
	watcher := te.engine(func(o *Options) { o.Clock = aheadClock{time.Hour} })
	out, err := watcher.ReadOutput(te.ctx, id, ReadParams{Wait: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if out.OwnerGone != 999999999 || out.Done || out.Status != store.RunRunning {
		t.Fatalf("output: %+v", out)
	}
}

type aheadClock struct{ d time.Duration }

func (c aheadClock) Now() time.Time { return time.Now().Add(c.d) }

func (c aheadClock) NewTimer(d time.Duration) clock.Timer { return clock.Real{}.NewTimer(d) }

func TestStopLetsAStepInFlightFinish(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"two.yaml": `
steps:
  - id: first
    shell: 'sleep 0.3; echo first >> out.txt'
  - id: second
    shell: 'echo second >> out.txt'
`})
	first := te.engine()
	r, err := first.Launch(te.ctx, LaunchParams{Target: "two"})
	if err != nil {
		t.Fatal(err)
	}
	waitStepStarted(t, te, first, r.ID, "first")
	first.Stop() // the step in flight finishes; the run is released before "second"
	got, err := te.e.Get(te.ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.RunRunning || got.OwnerPID != 0 || stepStatuses(got) != "first=succeeded second=pending" {
		t.Fatalf("after Stop: %s owner %d, steps %s", got.Status, got.OwnerPID, stepStatuses(got))
	}
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	done := te.wait(te.e, r.ID)
	if done.Status != store.RunSucceeded || te.read("out.txt") != "first\nsecond\n" {
		t.Fatalf("after adoption: %s, out.txt %q", done.Status, te.read("out.txt"))
	}
}
