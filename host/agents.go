package host

import (
	"fmt"
	"slices"
	"time"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/workflows"
)

// AgentSettings is the agents: section: what MCP clients may do (see
// access.Policy). Unset keys are the defaults: any target, automations
// fire at once, no limits, answers on the agent's own runs.
type AgentSettings struct {
	// Launch: the targets agents may launch and automate (names or
	// globs); empty: all.
	Launch []string `yaml:"launch"`
	// Automations: fire, approve or refuse.
	Automations string `yaml:"automations"`
	// MinInterval: the shortest time between fires of an agent's
	// automation.
	MinInterval *Duration `yaml:"min_interval"`
	// MaxAutomations: how many automations one agent may own (0: any).
	MaxAutomations int `yaml:"max_automations"`
	// Answer: own, all or none.
	Answer string `yaml:"answer"`
	// EditOthers: agents may change other agents' automations.
	EditOthers bool `yaml:"edit_others"`
}

// Policy is the access policy the settings describe.
func (a AgentSettings) Policy() (*access.Policy, error) {
	p := &access.Policy{
		Launch: a.Launch, Automations: access.AutomationMode(a.Automations),
		MaxAutomations: a.MaxAutomations, Answer: access.AnswerMode(a.Answer), EditOthers: a.EditOthers,
	}
	if a.MinInterval != nil {
		p.MinInterval = time.Duration(*a.MinInterval)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// WorkflowSettings is the workflows: section.
type WorkflowSettings struct {
	// UnquotedShellInput: what loading a workflow whose shell: interpolates
	// input without shellquote does: warn (the default) or error.
	UnquotedShellInput string `yaml:"unquoted_shell_input"`
}

// check is what the workflows must pass beyond parsing: nothing, or no
// warning under unquoted_shell_input: error.
func (w WorkflowSettings) check() func(*workflows.Workflow) error {
	if w.UnquotedShellInput == "error" {
		return workflows.RefuseWarnings
	}
	return nil
}

// Targets serves the workspace's workflow files under these settings.
func (w WorkflowSettings) Targets(dir string) runs.Targets {
	return runs.CheckedDirTargets(dir, w.check())
}

// WorkflowWarnings lists the warnings of the workflows that load (file,
// line, field): serve logs them, run and list print them.
func WorkflowWarnings(t runs.Targets, only string) []string {
	wfs, _ := t.List()
	var out []string
	for name, wf := range wfs {
		if only != "" && name != only {
			continue
		}
		for _, wn := range wf.Warnings {
			out = append(out, wn.Error())
		}
	}
	slices.Sort(out)
	return out
}

func (w WorkflowSettings) validate() error {
	switch w.UnquotedShellInput {
	case "", "warn", "error":
		return nil
	}
	return fmt.Errorf("workflows.unquoted_shell_input is %q; use warn or error", w.UnquotedShellInput)
}
