package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/reexec"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

const soakYAML = `
input:
  type: object
  properties: {file: {type: string}}
  required: [file]
steps:
  - id: a
    shell: 'echo "start a $$" >> "$OUT"; sleep 0.3; echo "end a $$" >> "$OUT"'
    env: {OUT: "${{ input.file }}"}
  - id: b
    shell: 'echo "start b $$" >> "$OUT"; sleep 0.3; echo "end b $$" >> "$OUT"'
    env: {OUT: "${{ input.file }}"}
  - id: c
    shell: 'echo "start c $$" >> "$OUT"; sleep 0.3; echo "end c $$" >> "$OUT"'
    env: {OUT: "${{ input.file }}"}
    safe_to_repeat: true
`

// soakKills is how many times TestKilledOwnersNeverOverlapAStep SIGKILLs
// a run's owner: 10 in a local make test (kept under its time budget),
// 200 under CI's CAIRN_SOAK, beyond the 50.
func soakKills() int { return reexec.Soak(10, 200) }

// TestKilledOwnersNeverOverlapAStep SIGKILLs the process owning a run
// soakKills() times in all (the launching process, then the peers that
// adopt the run; a run that settles before its share of kills is followed
// by another), at random moments, most of them while a step's command
// runs, sometimes leaving the run with no live process until the step in
// flight has ended: each step's command runs under its supervisor, so no
// two attempts of a step ever overlap, a step that completed while nobody
// owned the run is taken from its supervisor's record (recorded once, with
// the pid that ran it) and not run again, and every run succeeds (once
// answered when the ambiguous-step question was asked).
func TestKilledOwnersNeverOverlapAStep(t *testing.T) {
	t.Parallel()
	const perTest = 5
	kills := soakKills()
	var mu sync.Mutex
	var sum soakCounts
	t.Run("group", func(t *testing.T) {
		for i := 0; i < kills; i += perTest {
			t.Run(fmt.Sprintf("kills%d", i/perTest), func(t *testing.T) {
				t.Parallel()
				c := soakRuns(t, min(perTest, kills-i))
				mu.Lock()
				sum.add(c)
				mu.Unlock()
			})
		}
	})
	if t.Failed() {
		return
	}
	t.Logf("%d SIGKILLs of a run's owner in %d runs: %d while a step's command ran, %d steps completed while their owner was dead, %d ambiguous steps answered, %d results taken from a supervisor",
		sum.kills, sum.runs, sum.duringStep, sum.doneWhileDead, sum.answered, sum.took)
	if sum.kills != kills {
		t.Fatalf("%d kills, want %d", sum.kills, kills)
	}
	// Every run's first kill waits for a step's command and, once the
	// command ended, lets nobody own the run: both cases happened.
	if sum.duringStep == 0 || sum.doneWhileDead == 0 {
		t.Fatalf("no kill landed while a step ran, or no step completed while its owner was dead: %+v", sum)
	}
}

// soakCounts is what the soak's kills did.
type soakCounts struct {
	kills, runs, duringStep, doneWhileDead, answered, took int
}

func (c *soakCounts) add(o soakCounts) {
	c.kills += o.kills
	c.runs += o.runs
	c.duringStep += o.duringStep
	c.doneWhileDead += o.doneWhileDead
	c.answered += o.answered
	c.took += o.took
}

// soakRuns SIGKILLs owners of soak runs, one run after another in one
// workspace, until it has killed kills of them.
func soakRuns(t *testing.T, kills int) soakCounts {
	te := setup(t, map[string]string{"soak.yaml": soakYAML})
	var c soakCounts
	for c.kills < kills {
		soakOneRun(t, te, fmt.Sprintf("marks-%d.txt", c.runs), kills, &c)
		c.runs++
	}
	return c
}

// soakOneRun launches a soak run writing its marks to file and SIGKILLs
// its owners until the run settles or c counts kills kills, then lets a
// worker finish it and checks it.
func soakOneRun(t *testing.T, te *testEnv, file string, kills int, c *soakCounts) {
	owner, stderr, id := te.launchChild("launch", "soak", fmt.Sprintf(`{"file": %q}`, file))
	for first := true; ; first = false {
		// A random moment of the owner's life; the run's first kill, and
		// most others, while a step's command runs.
		inStep := first || rand.N(4) != 0
		if !inStep || !waitMarks(t, te, id, file, func(n int) bool { return n%2 == 1 }) {
			time.Sleep(rand.N(900 * time.Millisecond))
		} else if !first {
			time.Sleep(rand.N(100 * time.Millisecond))
		}
		_ = owner.Process.Signal(syscall.SIGKILL)
		if err := owner.Wait(); err != nil && !isKilled(err) {
			t.Fatalf("owner: %v\n%s", err, stderr)
		}
		c.kills++
		// A start without its end: the owner died while the command ran.
		during := marksIn(t, te, file)%2 == 1
		if during {
			c.duringStep++
		}
		if c.kills == kills {
			break
		}
		// Nobody owns the run meanwhile: for a while, or (always after the
		// first kill) until the command in flight has ended.
		if during && (first || rand.N(2) == 0) {
			if waitMarks(t, te, id, file, func(n int) bool { return n%2 == 0 }) {
				c.doneWhileDead++
			}
		} else if rand.N(2) == 0 {
			time.Sleep(rand.N(400 * time.Millisecond))
		}
		if r, err := te.st.GetRun(te.ctx, id); err != nil {
			t.Fatal(err)
		} else if r.Status.Settled() {
			break
		} else if r.Status == store.RunWaiting && r.Question != nil {
			c.answered += answerAmbiguous(t, te, r)
		}
		owner, stderr, _ = te.startChild("worker", "", "")
	}
	worker, wstderr, wout := te.startChild("worker", "", "")
	defer stopWorker(t, worker, wout, wstderr)
	ctx, cancel := context.WithTimeout(te.ctx, time.Minute)
	defer cancel()
	for {
		r, err := te.e.WaitSettledOrParked(ctx, id)
		if err != nil {
			t.Fatalf("run %s never settled: %v\nworker: %s", id, err, wstderr)
		}
		if r.Status.Settled() {
			break
		}
		c.answered += answerAmbiguous(t, te, &r.Run)
	}
	r, err := te.e.Get(te.ctx, id)
	if err != nil || r.Status != store.RunSucceeded {
		t.Fatalf("run %s: %+v %v", id, r, err)
	}
	pids := checkNoOverlap(t, te.read(file))
	checkRecordedOnce(t, te, id, pids)
	for _, rec := range te.records(te.e, id) {
		if rec.Type == RecordNote && strings.HasPrefix(rec.Text, "took the result") {
			c.took++
		}
	}
}

// marksIn counts the lines of a soak run's marks file.
func marksIn(t *testing.T, te *testEnv, file string) int {
	t.Helper()
	b, err := os.ReadFile(te.path(file))
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// waitMarks waits until the count of lines in a soak run's marks file
// satisfies ok, and reports whether it did before all three steps ended,
// run id stopped running (parked on a question, settled) or 30 s passed.
func waitMarks(t *testing.T, te *testEnv, id, file string, ok func(int) bool) bool {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		n := marksIn(t, te, file)
		if ok(n) && n < 6 {
			return true
		}
		if n >= 6 || time.Now().After(deadline) {
			return false
		}
		if i%25 == 24 {
			if r, err := te.st.GetRun(te.ctx, id); err != nil || r.Status == store.RunWaiting || r.Status.Settled() {
				return false
			}
		}
		time.Sleep(2 * time.Millisecond) // another process's file: nothing to wait on but time
	}
}

// checkRecordedOnce checks the ledger of a soak run: one call of each step,
// finished succeeded, whose result names the pid that ran it (pids, from
// the marks file).
func checkRecordedOnce(t *testing.T, te *testEnv, id string, pids map[string]int) {
	t.Helper()
	ledger, err := te.st.Ledger(te.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, en := range ledger {
		seen[en.Path]++
		var res stepRecord
		if err := json.Unmarshal(en.Result, &res); err != nil || en.State != store.StepFinished || en.Status != StepSucceeded || en.Position != 1 || res.PID != pids[en.Path] {
			t.Fatalf("run %s: ledger entry %+v (result pid %d, the marks' %d; %v)", id, en, res.PID, pids[en.Path], err)
		}
	}
	if len(seen) != 3 || seen["a"] != 1 || seen["b"] != 1 || seen["c"] != 1 {
		t.Fatalf("run %s: ledger calls %v, want one of each step", id, seen)
	}
}

// answerAmbiguous answers "retry" to run r's ambiguous-step question and
// returns 1, or fails on another question.
func answerAmbiguous(t *testing.T, te *testEnv, r *store.Run) int {
	t.Helper()
	if r.Question.Kind != "ambiguous" {
		t.Fatalf("run %s asks %+v", r.ID, r.Question)
	}
	if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: r.ID, QuestionID: r.Question.ID, Answer: AnswerRetry}); err != nil {
		t.Fatal(err)
	}
	return 1
}

// checkNoOverlap checks the marks the soak steps leave: each step's
// attempt is "start <step> <pid>" then "end <step> <pid>", never another
// line between them, and each step ran exactly once; it returns the pid
// of each step's attempt.
func checkNoOverlap(t *testing.T, marks string) map[string]int {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(marks), "\n")
	ran, pids := map[string]int{}, map[string]int{}
	for i := 0; i < len(lines); i += 2 {
		var step, end string
		var pid, endPID int
		if _, err := fmt.Sscanf(lines[i], "start %s %d", &step, &pid); err != nil {
			t.Fatalf("line %d %q: want a start\n%s", i+1, lines[i], marks)
		}
		if i+1 >= len(lines) {
			t.Fatalf("attempt of %s never ended\n%s", step, marks)
		}
		if _, err := fmt.Sscanf(lines[i+1], "end %s %d", &end, &endPID); err != nil || end != step || endPID != pid {
			t.Fatalf("line %d %q: want the end of %s %d (attempts overlap)\n%s", i+2, lines[i+1], step, pid, marks)
		}
		ran[step]++
		pids[step] = pid
	}
	if ran["a"] != 1 || ran["b"] != 1 || ran["c"] != 1 {
		t.Fatalf("steps ran %v times, want each once\n%s", ran, marks)
	}
	return pids
}

// TestCancelReachesTheStepOfAFrozenOwner: the run's owner is stopped
// (SIGSTOP) while its step runs; a cancel from this process stops the
// step at once, through its supervisor, and the owner settles the run
// cancelled once it runs again.
func TestCancelReachesTheStepOfAFrozenOwner(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"long.yaml": "steps:\n  - id: nap\n    exec: [\"sleep\", \"60\"]\n"})
	owner, stderr, id := te.launchChild("launch", "long", "")
	pid := waitStepStarted(t, te, te.e, id, "nap")
	if err := owner.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	defer func() {
		if !thawed {
			_ = owner.Process.Signal(syscall.SIGCONT)
		}
	}()
	if _, err := te.e.Cancel(te.ctx, id); err != nil {
		t.Fatal(err)
	}
	waitSupervisorGone(t, te, id)
	if alive(pid) {
		t.Fatalf("the step's process %d still runs after the cancel", pid)
	}
	state, err := readStepState(stepFilePath(te.ws.OutputDir(), id))
	if err != nil || state == nil || state.Result == nil || !state.Result.Stopped {
		t.Fatalf("step file after the cancel: %+v %v", state, err)
	}
	if r, _ := te.st.GetRun(te.ctx, id); r.Status != store.RunRunning {
		t.Fatalf("the frozen owner's run is %s", r.Status)
	}
	thawed = true
	if err := owner.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	done := te.wait(te.e, id)
	if done.Status != store.RunCancelled || done.Steps[0].Status != StepCancelled {
		t.Fatalf("after the owner ran again: %s %s", done.Status, stepStatuses(done))
	}
	if err := owner.Wait(); err != nil {
		t.Fatalf("owner: %v\n%s", err, stderr)
	}
}

// TestSupervisorRedactsTheSpecsSecrets: every occurrence of a string of
// the spec's Redact is "***" in the journal and in the result, and the
// spec never reaches the supervisor's argv or environment.
func TestSupervisorRedactsTheSpecsSecrets(t *testing.T) {
	t.Parallel()
	te := setup(t, nil)
	const secret = "hunter2-s3cr3t"
	id := "run_redact"
	spec := te.stepSpec(id, "leak", `echo "token=$TOKEN twice $TOKEN"; echo "$TOKEN" >&2; tr '\0' ' ' < /proc/$PPID/cmdline; echo; tr '\0' '\n' < /proc/$PPID/environ`)
	spec.Env = append(spec.Env, "TOKEN="+secret)
	spec.Redact = []string{secret}
	s, err := te.execution(id).startSupervisor(spec)
	if err != nil {
		t.Fatal(err)
	}
	<-s.done
	state, err := readStepState(stepFilePath(te.ws.OutputDir(), id))
	if err != nil || state == nil || state.Result == nil {
		t.Fatalf("step file: %+v %v", state, err)
	}
	if !strings.Contains(state.Result.Stdout, "token=*** twice ***") || strings.TrimSpace(state.Result.Stderr) != "***" {
		t.Fatalf("result: stdout %q, stderr %q", state.Result.Stdout, state.Result.Stderr)
	}
	journal, err := os.ReadFile(te.ws.OutputDir() + "/" + id + journalExt)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(journal), secret) || !strings.Contains(string(journal), "token=*** twice ***") {
		t.Fatalf("journal:\n%s", journal)
	}
	// The supervisor's command line and environment (its parent's, as the
	// step printed them) name nothing of the spec.
	if strings.Contains(state.Result.Stdout, "TOKEN") || strings.Contains(state.Result.Stdout, spec.OutputDir) {
		t.Fatalf("the supervisor's argv or environment carries the spec:\n%s", state.Result.Stdout)
	}
	if !strings.Contains(state.Result.Stdout, supervisorEnv+"="+supervisorMode) {
		t.Fatalf("the step did not print its supervisor's environment:\n%s", state.Result.Stdout)
	}
}

// TestStepRunsAgainOnlyOnceTheEarlierGroupIsGone: an earlier attempt
// whose supervisor died left a process in its group; a new supervisor of
// the run kills it, and waits until it is gone, before it starts its own.
func TestStepRunsAgainOnlyOnceTheEarlierGroupIsGone(t *testing.T) {
	t.Parallel()
	te := setup(t, nil)
	left := exec.Command("sleep", "60")
	left.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() { _ = left.Wait(); close(reaped) }()
	id := "run_leftover"
	path := stepFilePath(te.ws.OutputDir(), id)
	if err := os.MkdirAll(te.ws.OutputDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeStepState(path, &stepState{Step: "s", Attempt: 1, Supervisor: procRef{PID: 999999999}, Command: refOf(left.Process.Pid)}, true); err != nil {
		t.Fatal(err)
	}
	s, err := te.execution(id).startSupervisor(te.stepSpec(id, "s", "echo started"))
	if err != nil {
		t.Fatal(err)
	}
	// Told to go, it has killed the leftover already (a zombie until
	// this process reaps it counts as gone).
	if alive(left.Process.Pid) {
		t.Fatal("the supervisor started while the leftover of the earlier attempt lives")
	}
	<-reaped
	<-s.done
	state, _ := readStepState(path)
	if state == nil || state.Result == nil || state.Result.Stdout != "started\n" {
		t.Fatalf("step file: %+v", state)
	}
}

// stepSpec is a supervisor's spec for a shell script as step of run id.
func (te *testEnv) stepSpec(id, step, script string) stepSpec {
	return stepSpec{
		RunID: id, Step: step, Attempt: 1, Starts: 1,
		Argv: []string{"sh", "-c", script}, Dir: te.ws.Root, Env: []string{"PATH=" + os.Getenv("PATH")},
		Grace: time.Second, OutputCap: 1 << 20, LineCap: 1 << 10, JournalRunCap: DefaultJournalRunCap,
		OutputDir: te.ws.OutputDir(), LocksDir: te.ws.LocksDir(),
	}
}

// execution is an execution of run id on te's engine, as far as starting
// a supervisor needs one; its journal is closed when the test ends.
func (te *testEnv) execution(id string) *execution {
	x := &execution{e: te.e, id: id, ctx: te.ctx}
	x.j = te.e.openJournal(id)
	te.t.Cleanup(x.j.close)
	return x
}

// TestUnstartedSupervisedCallRunsWithoutAQuestion: a call recorded as
// started under a supervisor that never reached its command (no step
// file names it) did nothing: the adopting peer runs it, unsafe as it
// is, without asking; a call started without a supervisor (an older
// owner), or in an earlier boot, still asks.
func TestUnstartedSupervisedCallRunsWithoutAQuestion(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"one.yaml": "steps:\n  - id: once\n    shell: 'echo once >> out-$CAIRN_RUN_ID'\n"})
	supervised := orphan(t, te, "one", map[string]bool{"once": false})
	unsupervised := orphan(t, te, "one", map[string]bool{"once": false})
	earlierBoot := orphan(t, te, "one", map[string]bool{"once": false})
	// Mark the calls as started under a supervisor, as processStep does:
	// in this boot, and in an earlier one (whose unsynced step file a
	// crash of the machine may have lost).
	for id, boot := range map[string]string{supervised: locks.BootID(), earlierBoot: "an-earlier-boot"} {
		detail := fmt.Sprintf(`{"supervised":true,"boot":%q}`, boot)
		if _, err := te.st.StartStep(te.ctx, store.StepStart{RunID: id, Claim: "dead-claim", Path: "once", Position: 1, Kind: "shell", PID: 999999999, Detail: []byte(detail)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	if r := te.wait(te.e, supervised); r.Status != store.RunSucceeded || te.read("out-"+supervised) != "once\n" {
		t.Fatalf("supervised: %s %+v, out %q", r.Status, r.Question, te.read("out-"+supervised))
	}
	for _, id := range []string{unsupervised, earlierBoot} {
		if r := te.wait(te.e, id); r.Status != store.RunWaiting || r.Question == nil || r.Question.Kind != "ambiguous" {
			t.Fatalf("run %s: %s %+v", id, r.Status, r.Question)
		}
		if _, err := te.e.Cancel(te.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
}
