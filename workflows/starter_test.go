package workflows

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/starter.golden from Starter()")

// TestStarterGolden: the starter file `mcp-host init` writes changes only
// on purpose (go test ./workflows -run TestStarterGolden -update).
func TestStarterGolden(t *testing.T) {
	t.Parallel()
	golden := filepath.Join("testdata", "starter.golden")
	if *update {
		if err := os.WriteFile(golden, Starter(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(Starter(), want) {
		t.Errorf("Starter() differs from %s; run with -update if the change is intended:\n%s", golden, Starter())
	}
}

func TestStarterParses(t *testing.T) {
	t.Parallel()
	w, err := Parse(StarterFile, Starter())
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "hello" || DefaultName(StarterFile) != "hello" {
		t.Errorf("name = %q", w.Name)
	}
	want := []struct {
		id   string
		kind StepKind
		safe bool
	}{{"greet", KindExec, false}, {"confirm", KindAsk, true}, {"write", KindShell, false}, {"nap", KindSleep, true}}
	if len(w.Steps) != len(want) {
		t.Fatalf("%d steps", len(w.Steps))
	}
	for i, s := range w.Steps {
		if s.ID != want[i].id || s.Kind != want[i].kind || s.SafeToRepeat != want[i].safe {
			t.Errorf("step %d = %s %s safe=%v, want %+v", i, s.ID, s.Kind, s.SafeToRepeat, want[i])
		}
	}
	in, err := w.ValidateInput(nil)
	if err != nil || in["who"] != "world" {
		t.Fatalf("default input = %v, %v", in, err)
	}
	env := Env{Input: in, Steps: map[string]StepResult{"greet": {Status: "succeeded", Stdout: "hello world\n"}}}
	if arg, err := w.Steps[0].Exec[1].Render(env); err != nil || arg != "hello world" {
		t.Errorf("greet arg = %q, %v", arg, err)
	}
	if q, err := w.Steps[1].Ask.Text.Render(env); err != nil || q != "Go on, world?" {
		t.Errorf("question = %q, %v", q, err)
	}
	write := w.Steps[2]
	if run, err := write.If.EvalBool(env); err != nil || run {
		t.Errorf("write runs before the answer: %v, %v", run, err)
	}
	env.Steps["confirm"] = StepResult{Status: "succeeded", Answer: "yes"}
	if run, err := write.If.EvalBool(env); err != nil || !run {
		t.Errorf("write skipped after yes: %v, %v", run, err)
	}
	if write.Timeout != 30*time.Second || w.Steps[3].Sleep != 2*time.Second {
		t.Errorf("timeout %v, sleep %v", write.Timeout, w.Steps[3].Sleep)
	}
	if got, err := w.Result.Eval(env); err != nil || got != "hello world\n" {
		t.Errorf("result = %q, %v", got, err)
	}
	// Starter returns a copy: callers cannot corrupt the next init.
	s := Starter()
	s[0] = 'X'
	if Starter()[0] == 'X' {
		t.Error("Starter shares its buffer")
	}
}
