package runs

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/secrets"
	"github.com/cairnhq/cairn/store"
)

// The steps of these tests print, then say "ready" on the fifo ready and
// wait for a line on the fifo gate: the test kills the run's owner while
// the step waits, a peer adopts the run and re-attaches to the step, and
// the test lets the step go on.

const gatedOutputFileYAML = `
steps:
  - id: print
    output: file
    shell: |
      i=0; while [ $i -lt 300 ]; do printf 'before %05d\n' $i; i=$((i+1)); done
      echo ready > ready; read g < gate
      i=0; while [ $i -lt 300 ]; do printf 'after %05d\n' $i; i=$((i+1)); done
      echo oops >&2
`

// TestSupervisedOutputFileOutlivesItsOwner: a supervised `output: file`
// step whose owner is SIGKILLed mid-step keeps its whole output in its
// file: its supervisor writes the lines and the output_file records, and
// the peer that adopts the run takes its result.
func TestSupervisedOutputFileOutlivesItsOwner(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"big.yaml": gatedOutputFileYAML})
	id := killOwnerMidStep(t, te, "big", "print", func(string) {})
	r := te.wait(te.e, id)
	if r.Status != store.RunSucceeded || r.Question != nil {
		t.Fatalf("run %s: %s %+v", id, r.Status, r.Question)
	}
	file := outputFilePath(te.ws.OutputDir(), id, "print", 1)
	if r.Steps[0].OutputFile != file {
		t.Fatalf("step's output file %q, want %q", r.Steps[0].OutputFile, file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, what := range []string{"before", "after"} {
		for i := range 300 {
			want = append(want, fmt.Sprintf("%s %05d", what, i))
		}
	}
	// stdout's lines in order, and stderr's line wherever it came.
	got := string(b)
	if strings.Count(got, "oops\n") != 1 || strings.Replace(got, "oops\n", "", 1) != strings.Join(want, "\n")+"\n" {
		t.Fatalf("output file (%d bytes) is not the step's whole output:\n%.2000s", len(b), b)
	}
	var started, finished int
	for _, rec := range te.records(te.e, id) {
		switch {
		case rec.Type == RecordText:
			t.Fatalf("an output line is in the journal: %+v", rec)
		case rec.Type == RecordStep && rec.Event == "started" && rec.PID != 0:
			started++
		case rec.Type == RecordOutputFile && rec.Event == "started" && rec.File == file:
			started++
		case rec.Type == RecordOutputFile && rec.Event == "finished" && rec.File == file && rec.Lines == 601 && rec.Error == "":
			finished++
		}
	}
	if started != 2 || finished != 1 {
		t.Fatalf("journal: %d step/output_file started records (want 2), %d output_file finished with 601 lines (want 1)", started, finished)
	}
}

const gatedSecretYAML = `
steps:
  - id: leak
    exec: [sh, -c, 'echo "out $TOK"; echo "err $TOK" >&2; echo ready > ready; read g < gate; echo "after $TOK"; printf %s "$TOK" > seen.txt', sh, "${{ secrets.TOK }}"]
    env: {TOK: "${{ secrets.TOK }}"}
  - id: again
    exec: [sh, -c, 'echo "again $TOK"']
    env: {TOK: "${{ secrets.TOK }}"}
result: ${{ steps.leak.stdout }}
`

// TestAdoptedStepsSecretNeverStored: a secret echoed by a supervised step
// whose owner is SIGKILLed mid-step, adopted by a peer, is in no file
// under the state root, neither while the step runs under the adopter
// nor once the run settled; what the ledger holds is redacted.
func TestAdoptedStepsSecretNeverStored(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"leak.yaml": gatedSecretYAML})
	b := make([]byte, 12)
	rand.Read(b)
	secret := "tok-" + hex.EncodeToString(b)
	if err := secrets.Open(te.ws.StateDir, te.ws.LocksDir()).Set(te.ctx, "TOK", secret); err != nil {
		t.Fatal(err)
	}
	stateRoot := filepath.Dir(te.ws.StateDir)
	id := killOwnerMidStep(t, te, "leak", "leak", func(id string) {
		// Mid-step: the step file names the running call.
		if state, err := readStepState(stepFilePath(te.ws.OutputDir(), id)); err != nil || state == nil || state.Result != nil {
			t.Fatalf("step file mid-step: %+v %v", state, err)
		}
		grepTree(t, stateRoot, secret, 3)
	})
	r := te.wait(te.e, id)
	if r.Status != store.RunSucceeded || stepStatuses(r) != "leak=succeeded again=succeeded" {
		t.Fatalf("run %s: %s %s %s", id, r.Status, stepStatuses(r), r.Error)
	}
	if te.read("seen.txt") != secret {
		t.Fatalf("the step did not get the secret: %q", te.read("seen.txt"))
	}
	en, err := te.st.Ledger(te.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var leak *store.LedgerEntry
	for _, e := range en {
		if e.Path == "leak" {
			leak = e
		}
	}
	if leak == nil || !bytes.Contains(leak.Result, []byte(`out ***\nafter ***\n`)) || !bytes.Contains(leak.Result, []byte(`err ***`)) {
		t.Fatalf("the adopted call's ledger entry is not its redacted output: %+v", leak)
	}
	waitIdle(t, te.e) // the step file goes after the settle
	grepTree(t, stateRoot, secret, 3)
}

// killOwnerMidStep launches target in a child, SIGKILLs it while step
// waits on its gate, starts te's engine as the peer that adopts the run,
// and once the peer re-attached to it calls midStep with the run's id and
// lets the step go on. It returns the run's id.
func killOwnerMidStep(t *testing.T, te *testEnv, target, step string, midStep func(id string)) string {
	t.Helper()
	for _, name := range []string{"ready", "gate"} {
		if err := syscall.Mkfifo(te.path(name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	owner, stderr, id := te.launchChild("launch", target, "")
	fifo(t, "read ready", func() error { _, err := os.ReadFile(te.path("ready")); return err })
	if err := owner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := owner.Wait(); !isKilled(err) {
		t.Fatalf("owner: %v\n%s", err, stderr)
	}
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	waitRecord(t, te, te.e, id, func(rec Record) bool {
		return rec.Type == RecordNote && strings.Contains(rec.Text, "re-attached to step "+step)
	})
	midStep(id)
	fifo(t, "write gate", func() error { return os.WriteFile(te.path("gate"), []byte("go\n"), 0o600) })
	return id
}

// fifo does op, which blocks until the step opens its end of a fifo,
// failing the test if it never does (the step failed).
func fifo(t *testing.T, what string, op func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: the step never opened the fifo", what)
	}
}

// grepTree fails the test when a file under root holds value, or when it
// holds fewer than min files.
func grepTree(t *testing.T, root, value string, min int) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(value)) {
			t.Errorf("the secret's value is in %s", p)
		}
		return nil
	})
	if err != nil || files < min {
		t.Fatalf("walk %s: %v (%d files)", root, err, files)
	}
}

// TestAdopterRedactsTheTakenResult: a peer adopting a run takes the
// result the supervisor of a call an earlier owner dispatched recorded
// (here unredacted, as a supervisor of an older binary leaves it): the
// step's secrets are redacted from what reaches the ledger, the run's
// error and the journal all the same.
func TestAdopterRedactsTheTakenResult(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-adopted"
	te := setup(t, map[string]string{"leak.yaml": "steps:\n  - id: leak\n    exec: [sh, -c, 'echo \"$TOK\"']\n    env: {TOK: \"${{ secrets.TOK }}\"}\n"},
		func(o *Options) { o.Secrets = mapSecrets{"TOK": secret} })
	id := orphan(t, te, "leak", map[string]bool{"leak": false})
	if err := os.MkdirAll(te.ws.OutputDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	res := &stepResult{stepRecord: stepRecord{Stdout: "out " + secret + "\n", Stderr: fmt.Sprintf("err %q\n", secret)}, Err: "program ./" + secret + ": gone"}
	if err := writeStepState(stepFilePath(te.ws.OutputDir(), id), &stepState{Step: "leak", Attempt: 1, Starts: 1, Supervisor: procRef{PID: 999999999}, Result: res}, true); err != nil {
		t.Fatal(err)
	}
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	r := te.wait(te.e, id)
	if r.Status != store.RunFailed || r.Error != "step leak: program ./***: gone" {
		t.Fatalf("run %s: %s %q", id, r.Status, r.Error)
	}
	en, err := te.st.Ledger(te.ctx, id)
	if err != nil || len(en) != 1 || string(en[0].Result) != `{"stdout":"out ***\n","stderr":"err \"***\"\n"}` || en[0].Error != "program ./***: gone" {
		t.Fatalf("ledger: %+v %v", en, err)
	}
	took := false
	for _, rec := range te.records(te.e, id) {
		took = took || strings.HasPrefix(rec.Text, "took the result")
	}
	if !took {
		t.Fatal("the peer did not take the recorded result")
	}
	waitIdle(t, te.e) // the step file goes after the settle
	grepTree(t, filepath.Dir(te.ws.StateDir), secret, 3)
}

// TestStepFileHoldsNoSecret: the step file a supervisor writes holds its
// spec's secrets redacted, in the error text as in the output.
func TestStepFileHoldsNoSecret(t *testing.T) {
	t.Parallel()
	te := setup(t, nil)
	const secret = "hunter2-in-argv"
	id := "run_stepfile"
	spec := te.stepSpec(id, "leak", "")
	spec.Argv = []string{"./" + secret}
	spec.Redact = []string{secret}
	s, err := te.execution(id).startSupervisor(spec)
	if err != nil {
		t.Fatal(err)
	}
	<-s.done
	b, err := os.ReadFile(stepFilePath(te.ws.OutputDir(), id))
	if err != nil {
		t.Fatal(err)
	}
	state, err := readStepState(stepFilePath(te.ws.OutputDir(), id))
	if err != nil || state.Result == nil || !strings.HasPrefix(state.Result.Err, "program ./***: ") || bytes.Contains(b, []byte(secret)) {
		t.Fatalf("step file: %s (%v)", b, err)
	}
}
