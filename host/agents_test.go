package host

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/access"
)

func TestAgentsSettingsReachThePolicy(t *testing.T) {
	t.Parallel()
	h := open(t, setup(t, "agents:\n  launch: [hello, \"test-*\"]\n  automations: approve\n  min_interval: 1h\n  max_automations: 3\n  answer: none\n  edit_others: true\n"))
	want := access.Policy{Launch: []string{"hello", "test-*"}, Automations: access.Approve, MinInterval: time.Hour, MaxAutomations: 3, Answer: access.AnswerNone, EditOthers: true}
	p := h.Policy
	if p == nil || strings.Join(p.Launch, ",") != "hello,test-*" || p.Automations != want.Automations || p.MinInterval != want.MinInterval ||
		p.MaxAutomations != want.MaxAutomations || p.Answer != want.Answer || p.EditOthers != want.EditOthers {
		t.Fatalf("policy %+v, want %+v", p, want)
	}
	if h.Automations.Policy != p || h.Audit == nil {
		t.Fatal("the automations service does not get the policy, or the host has no audit log")
	}
	if def := open(t, setup(t, "")); def.Policy == nil || def.Policy.Automations != "" || len(def.Policy.Launch) != 0 {
		t.Fatalf("default policy %+v", def.Policy)
	}
}

func TestOpenRefusesBadAgentsSettings(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ config, want string }{
		"mode":        {"agents:\n  automations: sometimes\n", "agents.automations"},
		"answer":      {"agents:\n  answer: mine\n", "agents.answer"},
		"glob":        {"agents:\n  launch: [\"[\"]\n", "agents.launch"},
		"unknown key": {"agents:\n  lauch: [x]\n", "field lauch not found"},
		"shell mode":  {"workflows:\n  unquoted_shell_input: loud\n", "workflows.unquoted_shell_input"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := Open(context.Background(), setup(t, tc.config)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
