package runs

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/workflows"
)

// literals is what a run locks at launch and executes ever after.
type literals struct {
	Version int             `json:"version"`
	File    string          `json:"file"`   // the workflow file's name (for errors)
	Source  string          `json:"source"` // the file's bytes
	Input   json.RawMessage `json:"input"`  // the validated input, defaults filled
	// Env is the environment captured at launch (CaptureEnv): every step
	// gets it, whichever process executes the step. Runs stored before it
	// existed have none.
	Env map[string]string `json:"env,omitempty"`
}

// Literals returns the literals to store with a run of wf launched with
// input, which must be the result of wf.ValidateInput, and the
// environment of this process (CaptureEnv(nil)). Code that queues a run
// directly in the store (an automation's fire) fills Run.Literals with it
// and Run.Input with InputJSON(input).
func Literals(wf *workflows.Workflow, input map[string]any) (json.RawMessage, error) {
	return literalsWith(wf, input, CaptureEnv(nil))
}

func literalsWith(wf *workflows.Workflow, input map[string]any, env map[string]string) (json.RawMessage, error) {
	if wf == nil {
		return nil, errors.New("encode literals: no workflow")
	}
	in, err := InputJSON(input)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(literals{Version: 1, File: wf.File, Source: string(wf.Source), Input: in, Env: env})
	if err != nil {
		return nil, fmt.Errorf("encode literals: %w", err)
	}
	return b, nil
}

// InputJSON encodes a validated input for Run.Input.
func InputJSON(input map[string]any) (json.RawMessage, error) {
	if input == nil {
		input = map[string]any{}
	}
	b, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("encode input: %w", err)
	}
	return b, nil
}

// launchedRun is what a run was launched with: the workflow its literals
// hold, the validated input and the environment.
type launchedRun struct {
	wf    *workflows.Workflow
	input map[string]any
	env   map[string]string // nil for a run stored before runs kept it
}

// parseLiterals gives back the workflow and the input a run was launched
// with.
func parseLiterals(raw json.RawMessage) (*workflows.Workflow, map[string]any, error) {
	l, err := parseLaunched(raw)
	return l.wf, l.input, err
}

// parseLaunched gives back what a run was launched with.
func parseLaunched(raw json.RawMessage) (launchedRun, error) {
	var l literals
	if err := json.Unmarshal(raw, &l); err != nil {
		return launchedRun{}, fmt.Errorf("decode literals: %w", err)
	}
	if l.Version != 1 {
		return launchedRun{}, fmt.Errorf("decode literals: unknown version %d", l.Version)
	}
	wf, err := workflows.Parse(l.File, []byte(l.Source))
	if err != nil {
		return launchedRun{}, fmt.Errorf("parse the launched definition: %w", err)
	}
	// Validating again normalises numbers exactly as at launch; the input
	// was valid then, and the schema is the launched one.
	in, err := wf.ValidateInput(l.Input)
	if err != nil {
		return launchedRun{}, fmt.Errorf("decode literals: %w", err)
	}
	return launchedRun{wf: wf, input: in, env: l.Env}, nil
}
