package workflows

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

const examplesDir = "../examples"

// TestExamplesParse: every file in examples/ loads, and all of them load
// together as a workflows dir.
func TestExamplesParse(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("examples: %v, %v", files, err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		w, err := Parse(f, src)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if w.Description == "" {
			t.Errorf("%s: no description", f)
		}
		if _, err := w.ValidateInput(nil); err != nil && w.Name != "release-checklist" {
			t.Errorf("%s: default input refused: %v", f, err)
		}
	}
	got, errs := LoadDir(examplesDir)
	if len(errs) != 0 || len(got) != len(files) {
		t.Errorf("LoadDir(examples) = %d workflows, errors %v", len(got), errs)
	}
}

func loadExample(t *testing.T, name string) *Workflow {
	t.Helper()
	w, err := Load(examplesDir, name)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestExampleExpressions evaluates the examples' conditions and results
// with plausible step results, so the examples are not only well-formed
// but do what their comments say.
func TestExampleExpressions(t *testing.T) {
	t.Parallel()
	t.Run("release-checklist", func(t *testing.T) {
		t.Parallel()
		w := loadExample(t, "release-checklist")
		if _, err := w.ValidateInput(json.RawMessage(`{"version": "v1.2"}`)); err == nil {
			t.Error("version v1.2 accepted")
		}
		in, err := w.ValidateInput(json.RawMessage(`{"version": "1.2.0"}`))
		if err != nil {
			t.Fatal(err)
		}
		env := Env{Input: in, Steps: map[string]StepResult{
			"status":  {Status: "succeeded", Stdout: "\n"},
			"changes": {Status: "succeeded", Stdout: "abc123 fix things\n"},
			"confirm": {Status: "succeeded", Answer: "tag"},
		}}
		dirty, _ := w.Step("dirty")
		if run, err := dirty.If.EvalBool(env); err != nil || run {
			t.Errorf("dirty runs on a clean tree: %v, %v", run, err)
		}
		ask, _ := w.Step("confirm")
		text, err := ask.Ask.Text.Render(env)
		if want := "Tag v1.2.0 and push it to origin?\nChanges since the last tag:\nabc123 fix things\n\n"; err != nil || text != want {
			t.Errorf("question = %q, %v", text, err)
		}
		tag, _ := w.Step("tag")
		var argv []string
		for _, a := range tag.Exec {
			s, err := a.Render(env)
			if err != nil {
				t.Fatal(err)
			}
			argv = append(argv, s)
		}
		if want := []string{"git", "tag", "-a", "v1.2.0", "-m", "Release v1.2.0"}; !reflect.DeepEqual(argv, want) {
			t.Errorf("tag argv = %q", argv)
		}
		if got, err := w.Result.Eval(env); err != nil || got != "tagged v1.2.0" {
			t.Errorf("result = %v, %v", got, err)
		}
	})
	t.Run("health-ping", func(t *testing.T) {
		t.Parallel()
		w := loadExample(t, "health-ping")
		in, err := w.ValidateInput(json.RawMessage(`{"webhook": "https://chat.example.com/hook"}`))
		if err != nil {
			t.Fatal(err)
		}
		body := `{"status": "degraded"}`
		env := Env{Input: in, Steps: map[string]StepResult{
			"ping": {Status: "succeeded", StatusCode: 200, Body: body, Output: ParseOutput(body)},
		}}
		notify, _ := w.Step("notify")
		if run, err := notify.If.EvalBool(env); err != nil || !run {
			t.Errorf("notify skipped when degraded: %v, %v", run, err)
		}
		msg, err := notify.HTTP.Body.Render(env)
		if want := `{"text":"http://127.0.0.1:8080/healthz is degraded: {\"status\": \"degraded\"}"}`; err != nil || stripJSON(t, msg) != want {
			t.Errorf("body = %s, %v", msg, err)
		}
		env.Steps["ping"] = StepResult{Status: "succeeded", StatusCode: 200, Body: "OK"}
		if run, err := notify.If.EvalBool(env); err != nil || run {
			t.Errorf("notify runs on a plain OK: %v, %v", run, err)
		}
		got, err := w.Result.Eval(env)
		if want := map[string]any{"status": 200, "health": "OK"}; err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("result = %#v, %v", got, err)
		}
	})
	t.Run("nightly-backup-check", func(t *testing.T) {
		t.Parallel()
		w := loadExample(t, "nightly-backup-check")
		in, err := w.ValidateInput(nil)
		if err != nil {
			t.Fatal(err)
		}
		stale, _ := w.Step("stale")
		for out, want := range map[string]bool{
			`{"path": "backups/a.tar.gz", "bytes": 5000, "age_hours": 3}`:  false,
			`{"path": "backups/a.tar.gz", "bytes": 5000, "age_hours": 30}`: true,
			`{"path": "backups/a.tar.gz", "bytes": 10, "age_hours": 1}`:    true,
		} {
			env := Env{Input: in, Steps: map[string]StepResult{"newest": {Stdout: out, Output: ParseOutput(out)}}}
			if run, err := stale.If.EvalBool(env); err != nil || run != want {
				t.Errorf("stale for %s = %v, %v; want %v", out, run, err, want)
			}
		}
	})
}

// stripJSON re-encodes compact JSON so the comparison ignores spacing.
func stripJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %s", s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
