package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/mcp/mcptest"
	"github.com/cairnhq/cairn/store"
)

// TestPrompts lists and gets the run, schedule and status prompts.
func TestPrompts(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	m, err := f.client.Call(f.ctx(), "prompts/list", nil)
	if err != nil || m.Error != nil {
		t.Fatalf("prompts/list: %v %s", err, m.Raw)
	}
	for _, name := range []string{`"run"`, `"schedule"`, `"status"`} {
		if !strings.Contains(string(m.Result), `"name":`+name) {
			t.Errorf("prompts/list lacks %s: %s", name, m.Result)
		}
	}
	var waiting struct {
		ID string `json:"id"`
	}
	f.ok("launch_run", map[string]any{"target": "ask"}, &waiting)
	cases := []struct {
		name string
		args map[string]string
		want []string
	}{
		{"run", map[string]string{"target": "noop", "input": `{"a":1}`}, []string{"launch_run", `"noop"`, "does nothing", `{"a":1}`}},
		{"schedule", map[string]string{"target": "noop", "when": "every weekday at 9"}, []string{"create_automation", "every weekday at 9", "cron"}},
		{"status", nil, []string{waiting.ID, "Go on?", "waiting runs"}},
	}
	for _, c := range cases {
		m, err := f.client.Call(f.ctx(), "prompts/get", map[string]any{"name": c.name, "arguments": c.args})
		if err != nil || m.Error != nil {
			t.Fatalf("prompts/get %s: %v %s", c.name, err, m.Raw)
		}
		var res struct {
			Messages []struct {
				Role    string                `json:"role"`
				Content struct{ Text string } `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Messages) != 1 || res.Messages[0].Role != "user" {
			t.Fatalf("prompts/get %s: %s", c.name, m.Result)
		}
		for _, w := range c.want {
			if !strings.Contains(res.Messages[0].Content.Text, w) {
				t.Errorf("prompt %s: %q lacks %q", c.name, res.Messages[0].Content.Text, w)
			}
		}
	}
	if m, _ := f.client.Call(f.ctx(), "prompts/get", map[string]any{"name": "run", "arguments": map[string]string{}}); m.Error == nil || !strings.Contains(m.Error.Message, `"target" is required`) {
		t.Errorf("run without a target: %s", m.Raw)
	}
}

// TestCompletions completes prompt targets, automation keys and the
// resource templates' run_id.
func TestCompletions(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	var r struct {
		ID string `json:"id"`
	}
	f.ok("launch_run", map[string]any{"target": "noop"}, &r)
	f.ok("create_automation", map[string]any{"key": "nightly", "target": "noop", "every": "1h"}, nil)
	complete := func(ref map[string]any, name, value string) []string {
		t.Helper()
		m, err := f.client.Call(f.ctx(), "completion/complete", map[string]any{"ref": ref, "argument": map[string]any{"name": name, "value": value}})
		if err != nil || m.Error != nil {
			t.Fatalf("complete %s=%q: %v %s", name, value, err, m.Raw)
		}
		var res struct {
			Completion struct{ Values []string } `json:"completion"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil {
			t.Fatal(err)
		}
		return res.Completion.Values
	}
	if got := complete(map[string]any{"type": "ref/prompt", "name": "run"}, "target", "n"); len(got) != 1 || got[0] != "noop" {
		t.Errorf("target n…: %v, want [noop]", got)
	}
	if got := complete(map[string]any{"type": "ref/prompt", "name": "schedule"}, "key", "ni"); len(got) != 1 || got[0] != "nightly" {
		t.Errorf("key ni…: %v, want [nightly]", got)
	}
	if got := complete(map[string]any{"type": "ref/resource", "uri": "cairn://runs/{run_id}"}, "run_id", r.ID[:6]); len(got) == 0 || got[0] != r.ID && !contains(got, r.ID) {
		t.Errorf("run_id %s…: %v, want %s", r.ID[:6], got, r.ID)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestRunLog checks run lifecycle messages and logging/setLevel: at the
// default level only a failure is told, at info every status.
func TestRunLog(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	logged := func(id, status string) mcptest.Message {
		t.Helper()
		m, err := f.client.WaitFor(f.ctx(), func(m mcptest.Message) bool {
			return m.Method == "notifications/message" && strings.Contains(string(m.Params), id) && strings.Contains(string(m.Params), `"status":"`+status+`"`)
		})
		if err != nil {
			t.Fatalf("no log message for %s %s", id, status)
		}
		return m
	}
	var quiet, loud struct {
		ID string `json:"id"`
	}
	f.ok("launch_run", map[string]any{"target": "steps"}, &quiet)
	f.srv.RunChanged(quiet.ID) // running: info, below the default level
	f.runs.settle(quiet.ID, store.RunFailed)
	f.srv.RunChanged(quiet.ID)
	if m := logged(quiet.ID, "failed"); !strings.Contains(string(m.Params), `"level":"error"`) {
		t.Errorf("a failure: %s, want level error", m.Raw)
	}
	for _, m := range f.client.Messages() {
		if m.Method == "notifications/message" && strings.Contains(string(m.Params), `"status":"running"`) {
			t.Errorf("info message at the default level: %s", m.Raw)
		}
	}
	if m, err := f.client.Call(f.ctx(), "logging/setLevel", map[string]any{"level": "info"}); err != nil || m.Error != nil {
		t.Fatalf("setLevel: %v %s", err, m.Raw)
	}
	f.ok("launch_run", map[string]any{"target": "steps"}, &loud)
	f.srv.RunChanged(loud.ID)
	logged(loud.ID, "running")
	f.runs.settle(loud.ID, store.RunSucceeded)
	f.srv.RunChanged(loud.ID)
	if m := logged(loud.ID, "succeeded"); !strings.Contains(string(m.Params), `"logger":"cairn.runs"`) {
		t.Errorf("logger: %s", m.Raw)
	}
}
