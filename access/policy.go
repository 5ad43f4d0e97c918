package access

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// AutomationMode is what becomes of an automation an agent creates (or
// whose schedule or target it changes).
type AutomationMode string

const (
	// Fire: it is enabled at once (the default).
	Fire AutomationMode = "fire"
	// Approve: it is stored pending and fires only once a person runs
	// mcp-host automations approve KEY.
	Approve AutomationMode = "approve"
	// Refuse: agents cannot create automations.
	Refuse AutomationMode = "refuse"
)

// AnswerMode is which questions agents may answer. No mode lets an agent
// answer a human question (for: human, or an ambiguous step).
type AnswerMode string

const (
	// AnswerOwn: questions of runs the agent launched (the default).
	AnswerOwn AnswerMode = "own"
	// AnswerAll: questions of any run.
	AnswerAll AnswerMode = "all"
	// AnswerNone: no question.
	AnswerNone AnswerMode = "none"
)

// Policy is the agents: section of .cairn/config.yaml. The zero Policy
// (and a nil *Policy) is the default: any target, automations fire at
// once, no limits, answers on the agent's own runs.
type Policy struct {
	// Launch is the targets agents may launch and automate: names or
	// path.Match globs ("deploy-*"). Empty: all.
	Launch []string
	// Automations is what becomes of an agent's automation; "": Fire.
	Automations AutomationMode
	// MinInterval is the shortest time between two fires of an agent's
	// automation (0: no minimum).
	MinInterval time.Duration
	// MaxAutomations is how many automations one agent may own (0: no
	// limit).
	MaxAutomations int
	// Answer is which questions agents may answer; "": AnswerOwn.
	Answer AnswerMode
	// EditOthers lets an agent change other agents' automations (never a
	// person's or the config file's).
	EditOthers bool
}

// Policy keys, as refusals name them.
const (
	KeyLaunch         = "agents.launch"
	KeyAutomations    = "agents.automations"
	KeyMinInterval    = "agents.min_interval"
	KeyMaxAutomations = "agents.max_automations"
	KeyAnswer         = "agents.answer"
	KeyEditOthers     = "agents.edit_others"
)

// RefusedError is an agent's action the policy refuses. Key is the
// setting of .cairn/config.yaml that would allow it.
type RefusedError struct {
	Key    string
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refused by policy: %s (policy key %s in .cairn/config.yaml; only a person can change it)", e.Reason, e.Key)
}

// Validate checks the policy's values.
func (p *Policy) Validate() error {
	for _, g := range p.Launch {
		if _, err := path.Match(g, ""); err != nil || strings.TrimSpace(g) == "" {
			return fmt.Errorf("%s: %q is not a target name or glob", KeyLaunch, g)
		}
	}
	switch p.Automations {
	case "", Fire, Approve, Refuse:
	default:
		return fmt.Errorf("%s is %q; use fire, approve or refuse", KeyAutomations, p.Automations)
	}
	switch p.Answer {
	case "", AnswerOwn, AnswerAll, AnswerNone:
	default:
		return fmt.Errorf("%s is %q; use own, all or none", KeyAnswer, p.Answer)
	}
	if p.MinInterval < 0 || p.MaxAutomations < 0 {
		return fmt.Errorf("%s and %s must not be negative", KeyMinInterval, KeyMaxAutomations)
	}
	return nil
}

// CanLaunch checks that by may launch (or automate) target.
func (p *Policy) CanLaunch(by Principal, target string) error {
	if !by.IsAgent() || p == nil || len(p.Launch) == 0 {
		return nil
	}
	for _, g := range p.Launch {
		if ok, _ := path.Match(g, target); ok {
			return nil
		}
	}
	return &RefusedError{Key: KeyLaunch, Reason: fmt.Sprintf("agents may not launch target %q (allowed: %s)", target, strings.Join(p.Launch, ", "))}
}

// CanEdit checks that by may change, pause, delete or fire an automation
// of owner.
func (p *Policy) CanEdit(by Principal, owner string) error {
	if !by.IsAgent() {
		return nil
	}
	o := Of(owner)
	switch {
	case o == by:
		return nil
	case !o.IsAgent():
		return &RefusedError{Key: KeyEditOthers, Reason: fmt.Sprintf("the automation is owned by %s and is read-only to agents (%s covers other agents' automations only; a person changes it with mcp-host automations)", o, KeyEditOthers)}
	case p == nil || !p.EditOthers:
		return &RefusedError{Key: KeyEditOthers, Reason: fmt.Sprintf("the automation is owned by %s, not by %s", o, by)}
	}
	return nil
}

// AutomationCheck is an agent's new or changed automation.
type AutomationCheck struct {
	// Owned is how many automations the agent owns besides this one.
	Owned int
	// Interval is the shortest time between two of its fires (0:
	// unknown).
	Interval time.Duration
	// New is true for a create, false for a change of schedule or target.
	New bool
}

// CheckAutomation checks an agent's automation against the policy and
// says whether it must wait for approval.
func (p *Policy) CheckAutomation(by Principal, c AutomationCheck) (pending bool, err error) {
	if !by.IsAgent() || p == nil {
		return false, nil
	}
	if p.Automations == Refuse {
		return false, &RefusedError{Key: KeyAutomations, Reason: "agents may not create or reschedule automations"}
	}
	if c.New && p.MaxAutomations > 0 && c.Owned >= p.MaxAutomations {
		return false, &RefusedError{Key: KeyMaxAutomations, Reason: fmt.Sprintf("%s owns %d automations, the most allowed", by, c.Owned)}
	}
	if p.MinInterval > 0 && c.Interval > 0 && c.Interval < p.MinInterval {
		return false, &RefusedError{Key: KeyMinInterval, Reason: fmt.Sprintf("it would fire every %s; agents' automations fire at most every %s", c.Interval, p.MinInterval)}
	}
	return p.Automations == Approve, nil
}

// Question is what CanAnswer needs of a run's open question.
type Question struct {
	// HumanOnly: for: human, or an ambiguous step.
	HumanOnly bool
	// Launcher is the run's principal.
	Launcher Principal
}

// CanAnswer checks that by may answer q.
func (p *Policy) CanAnswer(by Principal, q Question) error {
	if !by.IsAgent() {
		return nil
	}
	if q.HumanOnly {
		return &RefusedError{Key: KeyAnswer, Reason: "the question is for a person (for: human, or a step that may or may not have run): answer it with mcp-host answer or through the client's prompt; no setting lets agents answer it"}
	}
	mode := AnswerOwn
	if p != nil && p.Answer != "" {
		mode = p.Answer
	}
	switch {
	case mode == AnswerNone:
		return &RefusedError{Key: KeyAnswer, Reason: "agents may not answer questions"}
	case mode == AnswerOwn && q.Launcher != by:
		return &RefusedError{Key: KeyAnswer, Reason: fmt.Sprintf("the run was launched by %s; agents answer only questions of runs they launched", q.Launcher)}
	}
	return nil
}
