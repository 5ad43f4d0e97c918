package access

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/ids"
)

func TestAgentPrincipal(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Principal{"Claude Code": "agent:Claude-Code", "": "agent:unknown", "a/b..c": "agent:a-b.c"} {
		if got := Agent(in); got != want {
			t.Errorf("Agent(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]Principal{"cli": Human, "": Human, "human": Human, "mcp:x": "agent:x", "agent:y": "agent:y", "config": "config"} {
		if got := Of(in); got != want {
			t.Errorf("Of(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAgentSanitizesClientNames: every client name gives a valid id.
func TestAgentSanitizesClientNames(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"Claude Code":                "Claude-Code",
		"":                           "unknown",
		"  ":                         "unknown",
		"cursor/1.0":                 "cursor-1.0",
		"../../x":                    "x",
		"a..b":                       "a.b",
		"vscode (insiders)":          "vscode-insiders",
		strings.Repeat("é", 10):      "unknown",
		strings.Repeat("a", 300):     strings.Repeat("a", maxPrincipalLen-len(AgentPrefix)),
		"mcp-client@2025 — beta-ish": "mcp-client-2025-beta-ish",
	}
	for in, want := range cases {
		if got := Agent(in); got != Principal(AgentPrefix+want) {
			t.Errorf("Agent(%q) = %q, want %q", in, got, AgentPrefix+want)
		}
		if err := ids.Validate("owner", string(Agent(in))); err != nil {
			t.Errorf("principal of %q is not a valid id: %v", in, err)
		}
	}
}

func refusedKey(err error) string {
	var re *RefusedError
	if errors.As(err, &re) {
		return re.Key
	}
	return ""
}

func TestCanEdit(t *testing.T) {
	t.Parallel()
	a, b := Agent("a"), Agent("b")
	cases := []struct {
		name   string
		p      *Policy
		by     Principal
		owner  string
		refuse string
	}{
		{"own", nil, a, "agent:a", ""},
		{"own, legacy owner name", nil, a, "mcp:a", ""},
		{"another agent's", nil, a, "agent:b", KeyEditOthers},
		{"another agent's with edit_others", &Policy{EditOthers: true}, a, "agent:b", ""},
		{"the human's", &Policy{EditOthers: true}, b, "human", KeyEditOthers},
		{"the legacy cli owner's", nil, b, "cli", KeyEditOthers},
		{"config's", &Policy{EditOthers: true}, b, "config", KeyEditOthers},
		{"a person edits anything", nil, Human, "agent:b", ""},
	}
	for _, c := range cases {
		if got := refusedKey(c.p.CanEdit(c.by, c.owner)); got != c.refuse {
			t.Errorf("%s: refusal key %q, want %q", c.name, got, c.refuse)
		}
	}
}

func TestCanLaunchAnswerAutomate(t *testing.T) {
	t.Parallel()
	a := Agent("a")
	p := &Policy{Launch: []string{"build", "test-*"}}
	if err := p.CanLaunch(a, "test-unit"); err != nil {
		t.Errorf("glob: %v", err)
	}
	if got := refusedKey(p.CanLaunch(a, "deploy")); got != KeyLaunch {
		t.Errorf("deploy: key %q", got)
	}
	if err := p.CanLaunch(Human, "deploy"); err != nil {
		t.Errorf("a person launches anything: %v", err)
	}
	var def *Policy
	if err := def.CanAnswer(a, Question{Launcher: a}); err != nil {
		t.Errorf("own run: %v", err)
	}
	if got := refusedKey(def.CanAnswer(a, Question{Launcher: Human})); got != KeyAnswer {
		t.Errorf("a person's run: key %q", got)
	}
	if got := refusedKey((&Policy{Answer: AnswerAll}).CanAnswer(a, Question{Launcher: a, HumanOnly: true})); got != KeyAnswer {
		t.Errorf("human question under all: key %q", got)
	}
	if err := def.CanAnswer(Human, Question{HumanOnly: true}); err != nil {
		t.Errorf("a person answers a human question: %v", err)
	}
	ap := &Policy{Automations: Approve, MinInterval: time.Hour, MaxAutomations: 2}
	if pending, err := ap.CheckAutomation(a, AutomationCheck{New: true, Owned: 1, Interval: 2 * time.Hour}); !pending || err != nil {
		t.Errorf("approve: pending %t, %v", pending, err)
	}
	if _, err := ap.CheckAutomation(a, AutomationCheck{New: true, Owned: 2}); refusedKey(err) != KeyMaxAutomations {
		t.Errorf("max: %v", err)
	}
	if _, err := ap.CheckAutomation(a, AutomationCheck{Interval: time.Minute}); refusedKey(err) != KeyMinInterval {
		t.Errorf("interval: %v", err)
	}
	if _, err := (&Policy{Automations: Refuse}).CheckAutomation(a, AutomationCheck{New: true}); refusedKey(err) != KeyAutomations {
		t.Errorf("refuse: %v", err)
	}
	if err := (&Policy{Automations: "sometimes"}).Validate(); err == nil {
		t.Error("Validate accepted automations: sometimes")
	}
}
