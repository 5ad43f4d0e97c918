package runs

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// stepOf returns step id of r.
func stepOf(t *testing.T, r *Run, id string) Step {
	t.Helper()
	for _, s := range r.Steps {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("run %s has no step %s: %s", r.ID, id, stepStatuses(r))
	return Step{}
}

const continueYAML = `
steps:
  - id: ping
    shell: "echo unreachable; exit 3"
    continue_on_error: true
  - id: alert
    if: ${{ steps.ping.status == "failed" }}
    exec: ["echo", "ping failed with ${{ steps.ping.exit_code }}"]
  - id: bad
    if: ${{ input.bad == true }}
    exec: ["false"]
    continue_on_error: true
    retry: {attempts: 2}
result: ${{ steps.alert.stdout }}
`

func TestContinueOnError(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"ping.yaml": continueYAML})
	r := te.wait(te.e, te.launch("ping", `{"bad": true}`).ID)
	if r.Status != store.RunSucceeded || string(r.Result) != `"ping failed with 3"` {
		t.Fatalf("run: %s %q %s", r.Status, r.Result, r.Error)
	}
	if got := stepStatuses(r); got != "ping=failed alert=succeeded bad=failed" {
		t.Fatalf("steps: %s", got)
	}
	ping := stepOf(t, r, "ping")
	if ping.ExitCode == nil || *ping.ExitCode != 3 || ping.OutputTail != "unreachable" {
		t.Fatalf("ping: %+v", ping)
	}
	if bad := stepOf(t, r, "bad"); bad.Attempts != 2 {
		t.Fatalf("bad: %d attempts, want its 2 retries before going on", bad.Attempts)
	}
}

const finallyYAML = `
steps:
  - id: work
    shell: 'echo working; exit ${{ input.code }}'
  - id: after
    exec: ["echo", "not reached on failure"]
finally:
  - id: report
    exec: ["sh", "-c", 'echo "${{ run.status }} ${{ run.failed_step }}" >> report.txt']
  - id: tidy
    exec: ["echo", "tidied after ${{ steps.report.status }}"]
result: ${{ steps.tidy.stdout }}
`

func TestFinallyAfterSuccessAndFailure(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"job.yaml": finallyYAML})
	ok := te.wait(te.e, te.launch("job", `{"code": 0}`).ID)
	if ok.Status != store.RunSucceeded || string(ok.Result) != `"tidied after succeeded"` {
		t.Fatalf("success: %s %q %s", ok.Status, ok.Result, ok.Error)
	}
	bad := te.wait(te.e, te.launch("job", `{"code": 4}`).ID)
	if bad.Status != store.RunFailed || !strings.HasPrefix(bad.Error, "step work: ") {
		t.Fatalf("failure: %s %q", bad.Status, bad.Error)
	}
	if got := stepStatuses(bad); got != "work=failed after=pending report=succeeded tidy=succeeded" {
		t.Fatalf("failure steps: %s", got)
	}
	if got := te.read("report.txt"); got != "succeeded \nfailed work\n" {
		t.Fatalf("report.txt = %q", got)
	}
}

func TestFinallyAfterCancel(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"long.yaml": `
steps:
  - id: nap
    exec: ["sleep", "60"]
finally:
  - id: report
    exec: ["sh", "-c", 'sleep 0.2; echo "${{ run.status }} ${{ steps.nap.status }}" >> report.txt']
`})
	r := te.launch("long", "")
	waitStepStarted(t, te, te.e, r.ID, "nap")
	if _, err := te.e.Cancel(te.ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	done := te.wait(te.e, r.ID)
	if done.Status != store.RunCancelled || stepStatuses(done) != "nap=cancelled report=succeeded" {
		t.Fatalf("after cancel: %s %s", done.Status, stepStatuses(done))
	}
	if got := te.read("report.txt"); got != "cancelled cancelled\n" {
		t.Fatalf("report.txt = %q", got)
	}
}

// A run stopped in the middle of its finally steps: the adopter replays
// the finally steps done before (they do not run again) and re-attaches
// to the one in flight, which goes on under its supervisor and runs once.
func TestFinallyRunsOnceAcrossAdoption(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"job.yaml": `
steps:
  - id: work
    exec: ["false"]
finally:
  - id: once
    exec: ["sh", "-c", "echo once >> once.txt"]
  - id: slow
    shell: "echo ran >> slow.txt; echo sleeping; while [ ! -e go ]; do sleep 0.05; done"
    safe_to_repeat: true
  - id: last
    exec: ["sh", "-c", "echo ${{ run.status }} ${{ run.failed_step }} >> last.txt"]
`})
	first := te.engine(func(o *Options) { o.StopGrace = 100 * time.Millisecond })
	r, err := first.Launch(te.ctx, LaunchParams{Target: "job"})
	if err != nil {
		t.Fatal(err)
	}
	waitRecord(t, te, first, r.ID, func(rec Record) bool { return rec.Type == RecordText && strings.Contains(rec.Text, "sleeping") })
	first.Stop()
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(te.path("go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done := te.wait(te.e, r.ID)
	if got := te.read("slow.txt"); got != "ran\n" {
		t.Fatalf("slow.txt = %q: the step in flight ran again", got)
	}
	if done.Status != store.RunFailed || done.Error != "step work: exit status 1" {
		t.Fatalf("run: %s %q (%s)", done.Status, done.Error, stepStatuses(done))
	}
	if got := te.read("once.txt"); got != "once\n" {
		t.Fatalf("once.txt = %q: a finished finally step ran again", got)
	}
	if got := te.read("last.txt"); got != "failed work\n" {
		t.Fatalf("last.txt = %q", got)
	}
	if s := stepOf(t, done, "slow"); s.Status != StepSucceeded || s.Attempts != 1 {
		t.Fatalf("slow: %+v", s)
	}
}

// A running run whose owner died, cancelled: the canceller adopts it to
// run its finally steps, then it settles cancelled.
func TestFinallyAfterCancelOfAnOrphan(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"job.yaml": `
steps:
  - id: nap
    exec: ["sleep", "60"]
finally:
  - id: report
    exec: ["sh", "-c", 'echo "${{ run.status }}" >> report.txt']
`})
	first := te.engine(func(o *Options) { o.StopGrace = 100 * time.Millisecond })
	r, err := first.Launch(te.ctx, LaunchParams{Target: "job"})
	if err != nil {
		t.Fatal(err)
	}
	waitStepStarted(t, te, first, r.ID, "nap")
	first.Stop() // released: running, no owner
	if _, err := te.e.Cancel(te.ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	done := te.wait(te.e, r.ID)
	if done.Status != store.RunCancelled {
		t.Fatalf("run: %s %s (%s)", done.Status, done.Error, stepStatuses(done))
	}
	if got := te.read("report.txt"); got != "cancelled\n" {
		t.Fatalf("report.txt = %q", got)
	}
}

// A run waiting on a question, cancelled: its finally steps run (the
// question is closed), then it settles cancelled.
func TestFinallyAfterCancelOfAWaitingRun(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"ask.yaml": `
steps:
  - id: confirm
    ask: "Go on?"
finally:
  - id: report
    exec: ["sh", "-c", 'echo "${{ run.status }} [${{ steps.confirm.answer }}]" >> report.txt']
`})
	p := te.wait(te.e, te.launch("ask", "").ID)
	if p.Status != store.RunWaiting || p.Question == nil {
		t.Fatalf("not waiting: %s", p.Status)
	}
	c, err := te.e.Cancel(te.ctx, p.ID)
	if err != nil || c.Status.Settled() || !c.CancelRequested || c.Question != nil {
		t.Fatalf("cancel: %+v %v", c, err)
	}
	done := te.wait(te.e, p.ID)
	if done.Status != store.RunCancelled || stepOf(t, done, "report").Status != StepSucceeded {
		t.Fatalf("after cancel: %s %s", done.Status, stepStatuses(done))
	}
	if got := te.read("report.txt"); got != "cancelled []\n" {
		t.Fatalf("report.txt = %q", got)
	}
	if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: p.ID, QuestionID: p.Question.ID, Answer: "yes"}); err == nil {
		t.Fatal("answering the cancelled run's question was accepted")
	}
}

// A run cancelled while still queued (no step started) settles at once,
// without its finally steps: there is nothing of it to tidy up.
func TestCancelOfAQueuedRunSkipsFinally(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"job.yaml": `
steps:
  - id: work
    exec: ["true"]
finally:
  - id: report
    exec: ["sh", "-c", 'echo "${{ run.status }}" >> report.txt']
`})
	r, err := te.e.Launch(te.ctx, LaunchParams{Target: "job", Detach: true})
	if err != nil || r.Status != store.RunQueued {
		t.Fatalf("detached launch: %+v %v", r, err)
	}
	c, err := te.e.Cancel(te.ctx, r.ID)
	if err != nil || c.Status != store.RunCancelled || stepStatuses(c) != "work=pending report=pending" {
		t.Fatalf("cancel: %+v %v", c, err)
	}
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := te.e.Resume(te.ctx, r.ID); ok || err != nil {
		t.Fatalf("Resume of the cancelled run: %v %v", ok, err)
	}
	if _, err := os.Stat(te.path("report.txt")); !os.IsNotExist(err) {
		t.Fatalf("report.txt: %v; the finally step ran", err)
	}
}
