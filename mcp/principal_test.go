package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
)

// TestPolicyRefusalsAreToolErrorsAndAudited: a launch outside
// agents.launch is an isError result naming the key; every agent action is
// audited with its principal, connection, digest and outcome.
func TestPolicyRefusalsAreToolErrorsAndAudited(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{clientName: "Agent A", policy: &access.Policy{Launch: []string{"noop", "as*"}}, audit: true})
	refusedArgs := map[string]any{"target": "steps"}
	if msg := f.fails("launch_run", refusedArgs); !strings.Contains(msg, "agents.launch") || !strings.Contains(msg, `"steps"`) {
		t.Fatalf("launch outside the policy: %q", msg)
	}
	var run runs.Run
	f.ok("launch_run", map[string]any{"target": "noop"}, &run)
	if run.Trigger.Principal != "agent:Agent-A" {
		t.Errorf("run principal %q", run.Trigger.Principal)
	}
	f.ok("list_runs", nil, nil) // reads are not audited
	if msg := f.fails("create_automation", map[string]any{"key": "k", "target": "steps", "every": "1h"}); !strings.Contains(msg, "agents.launch") {
		t.Errorf("automation of a target outside the policy: %q", msg)
	}

	got, err := f.st.ListAudit(context.Background(), store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		b, _ := json.Marshal(got)
		t.Fatalf("audit entries %s; want the refused launch, the launch and the refused create", b)
	}
	raw, _ := json.Marshal(refusedArgs)
	want := []store.AuditEntry{
		{Tool: "launch_run", Outcome: store.AuditRefused, Subject: access.KeyLaunch, ArgsDigest: audit.Digest(raw)},
		{Tool: "launch_run", Outcome: store.AuditOK, Subject: run.ID},
		{Tool: "create_automation", Outcome: store.AuditRefused, Subject: access.KeyLaunch},
	}
	for i, w := range want {
		g := got[i]
		if g.Tool != w.Tool || g.Outcome != w.Outcome || g.Subject != w.Subject || g.Principal != "agent:Agent-A" || !strings.HasPrefix(g.Connection, "conn_") {
			t.Errorf("entry %d = %+v; want %+v by agent:Agent-A on a connection", i, g, w)
		}
		if w.ArgsDigest != "" && g.ArgsDigest != w.ArgsDigest {
			t.Errorf("entry %d digest %s, want %s", i, g.ArgsDigest, w.ArgsDigest)
		}
	}
}

// TestAnswerPolicy: by default an agent answers only runs it launched.
func TestAnswerPolicy(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{clientName: "B"})
	var own runs.Run
	f.ok("launch_run", map[string]any{"target": "ask"}, &own)
	f.ok("answer_run", map[string]any{"run_id": own.ID, "answer": "yes"}, nil)

	human, err := f.runs.Launch(context.Background(), runs.LaunchParams{Target: "ask", Trigger: store.Trigger{Kind: "manual", Principal: "human"}})
	if err != nil {
		t.Fatal(err)
	}
	if msg := f.fails("answer_run", map[string]any{"run_id": human.ID, "answer": "yes"}); !strings.Contains(msg, "agents.answer") {
		t.Errorf("answer on a person's run: %q", msg)
	}
}
