package workflows

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/ids"
)

func mustParse(t *testing.T, src string) *Workflow {
	t.Helper()
	w, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return w
}

func TestParseStepKindsAndDefaults(t *testing.T) {
	t.Parallel()
	w := mustParse(t, `
description: all kinds
steps:
  - id: a
    exec: [go, test, "./..."]
    env: {GOFLAGS: "-count=1", WHO: "${{ input.who }}"}
    dir: ./sub//dir/
    retry: {attempts: 3, backoff: 2s}
  - id: b
    shell: |
      echo one
      echo two
    timeout: 1m
    safe_to_repeat: true
  - id: c
    ask: Ship it?
    choices: ["yes", "no"]
    timeout: 1h
    default: "no"
  - id: d
    sleep: 1h30m
  - id: e
    http: {url: "https://example.com/x"}
  - id: f
    http:
      method: post
      url: "https://example.com/hook/${{ run.id }}"
      headers: {Content-Type: application/json}
      body: '{"text": "${{ steps.a.stdout }}"}'
      expect_status: [200, 204]
  - id: g
    http: {method: HEAD, url: "http://localhost:8080/", expect_status: 200}
  - id: h
    if: steps.c.answer == "yes"
    ask: anything
  - id: i
    if: False
    sleep: 1s
  - id: j
    if: "  ${{ input.go }}  "
    sleep: 1s
`)
	if w.Name != "t" || w.Description != "all kinds" || w.File != "t.yaml" {
		t.Errorf("name/description/file = %q/%q/%q", w.Name, w.Description, w.File)
	}
	kinds := map[string]StepKind{"a": KindExec, "b": KindShell, "c": KindAsk, "d": KindSleep, "e": KindHTTP, "f": KindHTTP, "g": KindHTTP, "h": KindAsk, "i": KindSleep, "j": KindSleep}
	safe := map[string]bool{"a": false, "b": true, "c": true, "d": true, "e": true, "f": false, "g": true, "h": true, "i": true, "j": true}
	for _, s := range w.Steps {
		if s.Kind != kinds[s.ID] {
			t.Errorf("step %s kind = %s, want %s", s.ID, s.Kind, kinds[s.ID])
		}
		if s.SafeToRepeat != safe[s.ID] {
			t.Errorf("step %s safe_to_repeat = %v, want %v", s.ID, s.SafeToRepeat, safe[s.ID])
		}
	}
	a, _ := w.Step("a")
	if len(a.Exec) != 3 || a.Exec[2].String() != "./..." || a.Dir != "sub/dir" || a.Retry != (Retry{Attempts: 3, Backoff: 2 * time.Second}) {
		t.Errorf("step a = %+v", a)
	}
	if a.Line != 4 {
		t.Errorf("step a line = %d, want 4", a.Line)
	}
	if len(a.Env) != 2 || a.Env["WHO"].IsLiteral() || !a.Env["GOFLAGS"].IsLiteral() {
		t.Errorf("step a env = %v", a.Env)
	}
	b, _ := w.Step("b")
	if b.Shell.String() != "echo one\necho two\n" || b.Timeout != time.Minute || b.Retry.Attempts != 1 || b.Dir != "." {
		t.Errorf("step b = %+v", b)
	}
	c, _ := w.Step("c")
	if c.Ask.Text.String() != "Ship it?" || !reflect.DeepEqual(c.Ask.Choices, []string{"yes", "no"}) || !c.Ask.HasDefault || c.Ask.Default != "no" || c.Timeout != time.Hour {
		t.Errorf("step c = %+v ask %+v", c, c.Ask)
	}
	d, _ := w.Step("d")
	if d.Sleep != 90*time.Minute {
		t.Errorf("step d sleep = %v", d.Sleep)
	}
	e, _ := w.Step("e")
	if e.HTTP.Method != http.MethodGet || e.HTTP.Body != nil || e.HTTP.ExpectStatus != nil {
		t.Errorf("step e http = %+v", e.HTTP)
	}
	f, _ := w.Step("f")
	if f.HTTP.Method != http.MethodPost || !reflect.DeepEqual(f.HTTP.ExpectStatus, []int{200, 204}) || f.HTTP.Headers["Content-Type"].String() != "application/json" || f.HTTP.Body == nil {
		t.Errorf("step f http = %+v", f.HTTP)
	}
	g, _ := w.Step("g")
	if g.HTTP.Method != http.MethodHead || !reflect.DeepEqual(g.HTTP.ExpectStatus, []int{200}) {
		t.Errorf("step g http = %+v", g.HTTP)
	}
	h, _ := w.Step("h")
	if h.If == nil || h.If.String() != `steps.c.answer == "yes"` {
		t.Errorf("step h if = %v", h.If)
	}
	i, _ := w.Step("i")
	if run, err := i.If.EvalBool(Env{}); err != nil || run {
		t.Errorf("if: False = %v, %v", run, err)
	}
	j, _ := w.Step("j")
	if run, err := j.If.EvalBool(Env{Input: map[string]any{"go": true}}); err != nil || !run || j.If.String() != "input.go" {
		t.Errorf("if: ${{ input.go }} = %v, %v (%s)", run, err, j.If)
	}
	if _, ok := w.Step("zz"); ok {
		t.Error("Step(zz) found a step")
	}
}

func TestParseNames(t *testing.T) {
	t.Parallel()
	const body = "steps:\n  - id: x\n    exec: [true]\n"
	tests := []struct {
		file, src, want string
	}{
		{"hello.yaml", body, "hello"},
		{"nightly.yml", body, "nightly"},
		{".cairn/workflows/deploy.yaml", body, "deploy"},
		{"stored-literal", body, "stored-literal"},
		{"file.yaml", "name: other\n" + body, "other"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			w, err := Parse(tt.file, []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if w.Name != tt.want {
				t.Errorf("name = %q, want %q", w.Name, tt.want)
			}
		})
	}
}

func TestParseTriggers(t *testing.T) {
	t.Parallel()
	w := mustParse(t, `
on:
  - cron: "0 3 * * *"
    tz: Europe/Berlin
  - {cron: "@hourly"}
  - every: 15m
  - {files: "docs/**/*.md", every: 30s}
  - files: [go.mod, "./cmd/*.go"]
  - {http: "https://example.com/feed?x=1", every: 5m}
steps:
  - id: x
    exec: [true]
`)
	want := []Trigger{
		{Kind: TriggerCron, Cron: "0 3 * * *", TZ: "Europe/Berlin", Line: 3},
		{Kind: TriggerCron, Cron: "@hourly", Line: 5},
		{Kind: TriggerEvery, Every: 15 * time.Minute, Line: 6},
		{Kind: TriggerFiles, Files: []string{"docs/**/*.md"}, Every: 30 * time.Second, Line: 7},
		{Kind: TriggerFiles, Files: []string{"go.mod", "cmd/*.go"}, Line: 8},
		{Kind: TriggerHTTP, URL: "https://example.com/feed?x=1", Every: 5 * time.Minute, Line: 9},
	}
	if !reflect.DeepEqual(w.On, want) {
		t.Errorf("On =\n%+v\nwant\n%+v", w.On, want)
	}
}

// TestParseErrors checks that each bad file is refused with an error that
// names the file, the line and the field. Every want substring must occur.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	const ok = "steps:\n  - id: x\n    exec: [true]\n"
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"empty", "", []string{"t.yaml: empty file"}},
		{"only comment", "# nothing\n", []string{"t.yaml: empty file"}},
		{"malformed", "steps:\n  - id: x\n    exec: [a\nresult: y\n", []string{"t.yaml:", "malformed YAML: did not find expected ',' or ']'"}},
		{"tab indent", "steps:\n\t- id: x\n", []string{"t.yaml:", "malformed YAML"}},
		{"two documents", ok + "---\n" + ok, []string{"t.yaml:4: more than one YAML document"}},
		{"not a mapping", "- id: x\n", []string{"t.yaml:1: expected a mapping, got a list"}},
		{"unknown top key", ok + "reslt: x\n", []string{`t.yaml:4: unknown key "reslt" (did you mean "result"?)`}},
		{"unknown key far", ok + "banana: 1\n", []string{`t.yaml:4: unknown key "banana" (known keys: name, description, input, steps, result, on, finally)`}},
		{"duplicate top key", ok + "steps: []\n", []string{`t.yaml:4: duplicate key "steps" (first at line 1)`}},
		{"no steps", "name: x\n", []string{"t.yaml:1: missing `steps:`"}},
		{"empty steps", "steps: []\n", []string{"t.yaml:1: steps: must have at least one step"}},
		{"steps not list", "steps: {id: x}\n", []string{"t.yaml:1: steps: expected a list of steps, got a mapping"}},
		{"alias", "x: &a 1\n" + ok + "result: *a\n", []string{"t.yaml:5: YAML aliases (*a) are not supported"}},
		{"bad name", "name: ../x\n" + ok, []string{`t.yaml:1: name: invalid workflow name "../x"`}},
		{"bad file name", ok, nil}, // replaced below: file name with a space
		{"both exec and shell", "steps:\n  - id: x\n    exec: [a]\n    shell: b\n", []string{`t.yaml:4: step "x" has both exec and shell; choose one`}},
		{"three kinds", "steps:\n  - id: x\n    exec: [a]\n    shell: b\n    sleep: 1s\n", []string{`step "x" has both exec, shell and sleep; choose one`}},
		{"no kind", "steps:\n  - id: x\n    timeout: 1s\n", []string{`t.yaml:2: step "x" has nothing to do: add one of exec, shell, ask, sleep, http`}},
		{"unknown step key", "steps:\n  - id: x\n    exec: [a]\n    retries: 3\n", []string{`t.yaml:4: step "x": unknown key "retries" (did you mean "retry"?)`}},
		{"missing id", "steps:\n  - exec: [a]\n", []string{"t.yaml:2: steps[0]: missing `id:`"}},
		{"id dotdot", "steps:\n  - id: ../x\n    exec: [a]\n", []string{`t.yaml:2: steps[0]: id: invalid step id "../x": must not start with '.' or '-'`}},
		{"id slash", "steps:\n  - id: a/b\n    exec: [a]\n", []string{`t.yaml:2: steps[0]: id: invalid step id "a/b": character '/' not allowed`}},
		{"id NUL", "steps:\n  - id: \"a\\0b\"\n    exec: [a]\n", []string{`t.yaml:2: steps[0]: id: invalid step id "a\x00b": character '\x00' not allowed`}},
		{"id 1KB", "steps:\n  - id: " + strings.Repeat("a", 1024) + "\n    exec: [a]\n", []string{"t.yaml:2: steps[0]: id: invalid step id", "longer than 128 characters"}},
		{"id empty", "steps:\n  - id: \"\"\n    exec: [a]\n", []string{"t.yaml:2: steps[0]: id: invalid step id \"\": must not be empty"}},
		{"id null", "steps:\n  - id:\n    exec: [a]\n", []string{"t.yaml:2: steps[0]: id: expected a string, got null"}},
		{"duplicate id", "steps:\n  - id: x\n    exec: [a]\n  - id: x\n    exec: [b]\n", []string{`t.yaml:4: steps[1]: id: duplicate step id "x" (first at line 2)`}},
		{"exec string", "steps:\n  - id: x\n    exec: echo hi\n", []string{`t.yaml:3: step "x": exec: expected a list of arguments like ["echo", "hi"]; for a command line use` + " `shell:`"}},
		{"exec null", "steps:\n  - id: x\n    exec:\n", []string{`t.yaml:3: step "x": exec: expected a list of arguments, got null`}},
		{"exec empty", "steps:\n  - id: x\n    exec: []\n", []string{`t.yaml:3: step "x": exec: must have at least the program to run`}},
		{"exec empty program", "steps:\n  - id: x\n    exec: [\"\", a]\n", []string{`t.yaml:3: step "x": exec[0]: must not be empty`}},
		{"exec map arg", "steps:\n  - id: x\n    exec: [a, {b: c}]\n", []string{`t.yaml:3: step "x": exec[1]: expected a string, got a mapping`}},
		{"shell empty", "steps:\n  - id: x\n    shell: \"  \"\n", []string{`t.yaml:3: step "x": shell: must not be empty`}},
		{"bad duration unitless", "steps:\n  - id: x\n    exec: [a]\n    timeout: 30\n", []string{`t.yaml:4: step "x": timeout: bad duration "30": missing unit (write e.g. "30s")`}},
		{"bad duration text", "steps:\n  - id: x\n    sleep: soon\n", []string{`t.yaml:3: step "x": sleep: bad duration "soon": use a number and a unit`}},
		{"zero duration", "steps:\n  - id: x\n    sleep: 0s\n", []string{`t.yaml:3: step "x": sleep: bad duration "0s": must be greater than 0`}},
		{"negative duration", "steps:\n  - id: x\n    exec: [a]\n    timeout: -5s\n", []string{`t.yaml:4: step "x": timeout: bad duration "-5s": must be greater than 0`}},
		{"timeout on sleep", "steps:\n  - id: x\n    sleep: 1s\n    timeout: 2s\n", []string{"t.yaml:4: step \"x\": `timeout` applies only to exec, shell, http and ask steps, not sleep"}},
		{"env on http", "steps:\n  - id: x\n    http: {url: \"https://a.b\"}\n    env: {A: b}\n", []string{"t.yaml:4: step \"x\": `env` applies only to exec and shell steps, not http"}},
		{"choices on exec", "steps:\n  - id: x\n    exec: [a]\n    choices: [a]\n", []string{"t.yaml:4: step \"x\": `choices` applies only to ask steps, not exec"}},
		{"retry zero", "steps:\n  - id: x\n    exec: [a]\n    retry: {attempts: 0}\n", []string{`t.yaml:4: step "x": retry: attempts: must be between 1 and 100, got 0`}},
		{"retry no attempts", "steps:\n  - id: x\n    exec: [a]\n    retry: {backoff: 1s}\n", []string{"t.yaml:4: step \"x\": retry: missing `attempts:`"}},
		{"retry unknown", "steps:\n  - id: x\n    exec: [a]\n    retry: {attempts: 2, backof: 1s}\n", []string{`t.yaml:4: step "x": retry: unknown key "backof" (did you mean "backoff"?)`}},
		{"retry float", "steps:\n  - id: x\n    exec: [a]\n    retry: {attempts: 2.5}\n", []string{`step "x": retry: attempts: expected a whole number, got a number`}},
		{"safe not bool", "steps:\n  - id: x\n    exec: [a]\n    safe_to_repeat: maybe\n", []string{`t.yaml:4: step "x": safe_to_repeat: expected true or false, got a string`}},
		{"env bad name", "steps:\n  - id: x\n    exec: [a]\n    env: {\"1A\": x, \"B-C\": y}\n", []string{`t.yaml:4: step "x": env: bad environment variable name "1A"`, `bad environment variable name "B-C"`}},
		{"env not map", "steps:\n  - id: x\n    exec: [a]\n    env: [A]\n", []string{`t.yaml:4: step "x": env: expected a mapping, got a list`}},
		{"dir dotdot", "steps:\n  - id: x\n    exec: [a]\n    dir: sub/../../x\n", []string{`t.yaml:4: step "x": dir: "sub/../../x" leaves the workspace`}},
		{"dir absolute", "steps:\n  - id: x\n    exec: [a]\n    dir: /tmp\n", []string{`t.yaml:4: step "x": dir: "/tmp" is absolute`}},
		{"ask empty", "steps:\n  - id: x\n    ask: \"\"\n", []string{`t.yaml:3: step "x": ask: must not be empty`}},
		{"ask empty choices", "steps:\n  - id: x\n    ask: q\n    choices: []\n", []string{`t.yaml:4: step "x": choices: must not be empty`}},
		{"ask dup choice", "steps:\n  - id: x\n    ask: q\n    choices: [a, a]\n", []string{`t.yaml:4: step "x": choices: choice "a" is listed twice`}},
		{"ask default not a choice", "steps:\n  - id: x\n    ask: q\n    choices: [a, b]\n    timeout: 1m\n    default: c\n", []string{`t.yaml:6: step "x": default: "c" is not one of the choices (a, b)`}},
		{"ask default without timeout", "steps:\n  - id: x\n    ask: q\n    default: c\n", []string{"t.yaml:4: step \"x\": default: a default answer needs a `timeout`"}},
		{"http no url", "steps:\n  - id: x\n    http: {method: GET}\n", []string{"t.yaml:3: step \"x\": http: missing `url:`"}},
		{"http bad scheme", "steps:\n  - id: x\n    http: {url: \"ftp://a.b/\"}\n", []string{`t.yaml:3: step "x": http: url: bad URL "ftp://a.b/": must start with http:// or https://`}},
		{"http credentials", "steps:\n  - id: x\n    http: {url: \"https://me:secret@a.b/x\"}\n", []string{`t.yaml:3: step "x": http: url: bad URL "https://a.b/x" (credentials removed): must not hold credentials`}},
		{"http unknown key", "steps:\n  - id: x\n    http: {url: \"https://a.b\", header: {}}\n", []string{`t.yaml:3: step "x": http: unknown key "header" (did you mean "headers"?)`}},
		{"http bad method", "steps:\n  - id: x\n    http: {url: \"https://a.b\", method: \"GE T\"}\n", []string{`step "x": http: method: bad method "GE T"`}},
		{"http bad status", "steps:\n  - id: x\n    http: {url: \"https://a.b\", expect_status: [200, 999]}\n", []string{`t.yaml:3: step "x": http: expect_status: 999 is not an HTTP status`}},
		{"http bad header", "steps:\n  - id: x\n    http:\n      url: \"https://a.b\"\n      headers: {\"Bad Header\": x}\n", []string{`t.yaml:5: step "x": http: headers: bad header name "Bad Header"`}},
		{"expr syntax", "steps:\n  - id: x\n    exec: [echo, \"${{ input.who + }}\"]\n", []string{`t.yaml:3: step "x": exec[1]: compile expression "input.who +": unexpected token EOF`}},
		{"expr unknown name", "steps:\n  - id: x\n    exec: [echo, \"${{ inputs.who }}\"]\n", []string{`t.yaml:3: step "x": exec[1]: compile expression "inputs.who": unknown name inputs (column 1)`}},
		{"expr unknown field", "steps:\n  - id: x\n    exec: [echo]\n  - id: y\n    exec: [echo, \"${{ steps.x.stdot }}\"]\n", []string{`t.yaml:5: step "y": exec[1]: compile expression "steps.x.stdot"`, "has no field stdot"}},
		{"expr unknown step", "steps:\n  - id: x\n    exec: [echo, \"${{ steps.nope.stdout }}\"]\n", []string{`t.yaml:3: step "x": exec[1]: compile expression "steps.nope.stdout": no step with id "nope"`}},
		{"expr unknown step index", "steps:\n  - id: x\n    exec: [echo, '${{ steps[\"nope\"].stdout }}']\n", []string{`no step with id "nope"`}},
		{"expr unclosed", "steps:\n  - id: x\n    exec: [echo, \"${{ input.who\"]\n", []string{`t.yaml:3: step "x": exec[1]: "${{" without a closing "}}"`}},
		{"expr empty", "steps:\n  - id: x\n    exec: [echo, \"${{ }}\"]\n", []string{`t.yaml:3: step "x": exec[1]: empty expression`}},
		{"expr in block line", "steps:\n  - id: x\n    shell: |\n      echo one\n      echo two\n      echo ${{ nope }}\n", []string{`t.yaml:6: step "x": shell: compile expression "nope": unknown name nope`}},
		{"expr in env", "steps:\n  - id: x\n    exec: [a]\n    env: {A: \"${{ 1 + }}\"}\n", []string{`t.yaml:4: step "x": env: A: compile expression`}},
		{"if mixed text", "steps:\n  - id: x\n    if: \"a ${{ true }}\"\n    exec: [a]\n", []string{`t.yaml:3: step "x": if: must be one expression`}},
		{"if string", "steps:\n  - id: x\n    exec: [a]\n  - id: y\n    if: ${{ steps.x.stdout }}\n    exec: [a]\n", []string{`t.yaml:5: step "y": if: must be a condition (true or false), but "steps.x.stdout" is a string`}},
		{"if number", "steps:\n  - id: x\n    if: 1\n    exec: [a]\n", []string{`t.yaml:3: step "x": if: must be a condition (true or false), but "1" is a number`}},
		{"if syntax", "steps:\n  - id: x\n    if: input.a ==\n    exec: [a]\n", []string{`t.yaml:3: step "x": if: compile expression "input.a =="`}},
		{"result unknown", ok + "result: ${{ step.x.stdout }}\n", []string{`t.yaml:4: result: compile expression "step.x.stdout": unknown name step`}},
		{"input not a mapping", "input: [a]\n" + ok, []string{"t.yaml:1: input: expected a JSON Schema mapping"}},
		{"input not object", "input: {type: string}\n" + ok, []string{"t.yaml:1: input: the input is always an object: `type` must be object"}},
		{"input bad schema", "input:\n  type: object\n  properties:\n    who: {type: strin}\n" + ok, []string{"t.yaml:4: input: /properties/who/type: not a valid JSON Schema: value must be one of"}},
		{"input remote ref", "input:\n  type: object\n  properties:\n    who: {$ref: \"file:///etc/passwd\"}\n" + ok, []string{"t.yaml:2: input: compile schema:", "schemas may only refer to themselves"}},
		{"input nan", "input:\n  type: object\n  properties:\n    n: {type: number, default: .nan}\n" + ok, []string{"t.yaml:4: input: .nan is not a JSON number"}},
		{"on not list", "on: {every: 1m}\n" + ok, []string{"t.yaml:1: on: expected a list of triggers"}},
		{"on empty trigger", "on:\n  - {tz: UTC}\n" + ok, []string{"t.yaml:2: on[0]: needs one of cron, every, files, http"}},
		{"on unknown key", "on:\n  - {crn: \"* * * * *\"}\n" + ok, []string{`t.yaml:2: on[0]: unknown key "crn" (did you mean "cron"?)`}},
		{"on cron and every", "on:\n  - cron: \"* * * * *\"\n    every: 1m\n" + ok, []string{"t.yaml:3: on[0]: has both cron and every"}},
		{"on cron and files", "on:\n  - {cron: \"* * * * *\", files: x}\n" + ok, []string{"t.yaml:2: on[0]: has both cron and files"}},
		{"on tz without cron", "on:\n  - {every: 1m, tz: UTC}\n" + ok, []string{"t.yaml:2: on[0]: `tz` applies only to cron triggers"}},
		{"on zero every", "on:\n  - every: 0s\n" + ok, []string{`t.yaml:2: on[0]: every: bad duration "0s": must be greater than 0`}},
		{"on bad every", "on:\n  - every: 5\n" + ok, []string{`t.yaml:2: on[0]: every: bad duration "5": missing unit`}},
		{"on files absolute", "on:\n  - files: /etc/*\n" + ok, []string{`t.yaml:2: on[0]: files: "/etc/*" is absolute`}},
		{"on files dotdot", "on:\n  - files: [ok.txt, \"docs/../../x\"]\n" + ok, []string{`t.yaml:2: on[0]: files: "docs/../../x" leaves the workspace`}},
		{"on files bad glob", "on:\n  - files: \"docs/[\"\n" + ok, []string{`t.yaml:2: on[0]: files: bad glob "docs/["`}},
		{"on http scheme", "on:\n  - http: \"file:///etc/passwd\"\n" + ok, []string{`t.yaml:2: on[0]: http: bad URL "file:///etc/passwd": must start with http://`}},
		{"on http creds", "on:\n  - http: \"https://u:p@example.com/\"\n" + ok, []string{`t.yaml:2: on[0]: http: bad URL "https://example.com/" (credentials removed)`}},
		{"on http no host", "on:\n  - http: \"https:///x\"\n" + ok, []string{`t.yaml:2: on[0]: http: bad URL "https:///x": no host`}},
		{"finally dup id", ok + "finally:\n  - id: x\n    exec: [\"true\"]\n", []string{`finally[0]: id: duplicate step id "x"`}},
		{"finally empty", ok + "finally: []\n", []string{"finally: must have at least one step"}},
		{"step names a finally step", "steps:\n  - id: a\n    exec: [\"echo\", \"${{ steps.f.stdout }}\"]\nfinally:\n  - id: f\n    exec: [\"true\"]\n", []string{`no step with id "f"`}},
		{"continue_on_error not bool", "steps:\n  - id: a\n    exec: [\"true\"]\n    continue_on_error: maybe\n", []string{"continue_on_error"}},
		{"several problems", "stepz: 1\nsteps:\n  - id: x\n    sleep: 0s\n", []string{`t.yaml:1: unknown key "stepz"`, `t.yaml:4: step "x": sleep: bad duration`}},
	}
	for _, tt := range tests {
		if tt.want == nil {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, err := Parse("t.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse succeeded (%d steps), want error with %q", len(w.Steps), tt.want)
			}
			if w != nil {
				t.Errorf("Parse returned a workflow with its error")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error\n  %v\nlacks\n  %s", err, want)
				}
			}
			var e *Error
			if !errors.As(err, &e) || e.File != "t.yaml" {
				t.Errorf("error is not an *Error naming t.yaml: %#v", err)
			}
		})
	}
}

func TestParseErrorIsTyped(t *testing.T) {
	t.Parallel()
	_, err := Parse("wf.yaml", []byte("steps:\n  - id: ../x\n    exec: [a]\n"))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("not an *Error: %v", err)
	}
	if e.File != "wf.yaml" || e.Line != 2 || e.Field != "steps[0]: id" {
		t.Errorf("Error = %+v", e)
	}
	var inv *ids.InvalidError
	if !errors.As(err, &inv) || inv.Kind != "step id" {
		t.Errorf("does not wrap *ids.InvalidError: %v", err)
	}
}

func TestParseFileNameNotAnID(t *testing.T) {
	t.Parallel()
	_, err := Parse("my flow.yaml", []byte("steps:\n  - id: x\n    exec: [a]\n"))
	if err == nil || !strings.Contains(err.Error(), `my flow.yaml: name the workflow with`+" `name:` "+`or rename the file: invalid workflow name "my flow"`) {
		t.Errorf("err = %v", err)
	}
	if _, err := Parse("my flow.yaml", []byte("name: ok\nsteps:\n  - id: x\n    exec: [a]\n")); err != nil {
		t.Errorf("with name: %v", err)
	}
}

func TestParseTooLarge(t *testing.T) {
	t.Parallel()
	src := append([]byte("# "), bytes.Repeat([]byte("x"), MaxFileSize)...)
	if _, err := Parse("big.yaml", src); err == nil || !strings.Contains(err.Error(), "big.yaml: file is larger than") {
		t.Errorf("err = %v", err)
	}
}

func TestParseCapsProblems(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("steps:\n")
	for range 100 {
		b.WriteString("  - id: ../x\n    exec: [a]\n")
	}
	_, err := Parse("t.yaml", []byte(b.String()))
	if n := strings.Count(err.Error(), "\n") + 1; n != maxProblems {
		t.Errorf("%d problems reported, want %d", n, maxProblems)
	}
}

// TestSnapshotReparse: what the engine stores (File, Source) parses back
// to the same workflow, and the source is a copy, not the caller's slice.
func TestSnapshotReparse(t *testing.T) {
	t.Parallel()
	src := Starter()
	w, err := Parse(".cairn/workflows/hello.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	for i := range src {
		src[i] = '#'
	}
	again, err := Parse(w.File, w.Source)
	if err != nil {
		t.Fatalf("reparse: %v", err)
	}
	if again.Name != "hello" || len(again.Steps) != len(w.Steps) || !bytes.Equal(again.Source, w.Source) {
		t.Errorf("reparse differs: %q %d steps", again.Name, len(again.Steps))
	}
	for i, s := range again.Steps {
		if s.ID != w.Steps[i].ID || s.Kind != w.Steps[i].Kind || s.SafeToRepeat != w.Steps[i].SafeToRepeat {
			t.Errorf("step %d: %+v vs %+v", i, s, w.Steps[i])
		}
	}
}

// TestBadFiles parses testdata/bad/*.yaml; each file lists the error
// substrings it must produce in "# want: ..." lines.
func TestBadFiles(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/bad files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var wants []string
			for line := range strings.Lines(string(src)) {
				if w, ok := strings.CutPrefix(line, "# want: "); ok {
					wants = append(wants, strings.TrimSpace(w))
				}
			}
			if len(wants) == 0 {
				t.Fatal("no # want: lines")
			}
			_, err = Parse(filepath.Base(file), src)
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			got := strings.Split(err.Error(), "\n")
			if len(got) != len(wants) {
				t.Errorf("got %d problems, want %d:\n%v", len(got), len(wants), err)
			}
			for _, want := range wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error\n%v\nlacks\n  %s", err, want)
				}
			}
		})
	}
}

func TestParseFinallyAndContinueOnError(t *testing.T) {
	t.Parallel()
	w, err := Parse("t.yaml", []byte(`
steps:
  - id: ping
    exec: ["false"]
    continue_on_error: true
finally:
  - id: report
    if: ${{ run.status == "failed" || steps.ping.status == "failed" }}
    exec: ["echo", "${{ run.failed_step }}"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Steps) != 1 || !w.Steps[0].ContinueOnError || len(w.Finally) != 1 || w.Finally[0].ContinueOnError {
		t.Fatalf("steps %+v finally %+v", w.Steps, w.Finally)
	}
	if s, ok := w.Step("report"); !ok || s != w.Finally[0] {
		t.Fatalf("Step(report) = %v %v", s, ok)
	}
	ok, err := w.Finally[0].If.EvalBool(Env{Run: RunInfo{Status: "succeeded"}, Steps: map[string]StepResult{"ping": {Status: "failed"}}})
	if err != nil || !ok {
		t.Fatalf("if: %v %v", ok, err)
	}
}
