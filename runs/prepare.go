package runs

import (
	"encoding/json"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

// Prepared is a run ready to store, made the one way both Engine.Launch
// and an automation's fire make runs.
type Prepared struct {
	// Run has ID, Target, Status (queued), Input (validated, defaults
	// filled) and Literals set; the caller adds its trigger and claim.
	Run      *store.Run
	Workflow *workflows.Workflow
	Input    map[string]any    // the validated input Run.Input encodes
	Env      map[string]string // the environment the literals keep
}

// Prepare validates input against wf (an empty or null input is {}),
// fills its defaults and builds the run's literals, with this process's
// environment (CaptureEnv(nil)). A refused input gives a
// *workflows.InputError.
func Prepare(wf *workflows.Workflow, input json.RawMessage) (*Prepared, error) {
	return prepare(wf, input, CaptureEnv(nil))
}

func prepare(wf *workflows.Workflow, input json.RawMessage, env map[string]string) (*Prepared, error) {
	if err := checkInputSize(len(input)); err != nil {
		return nil, err
	}
	in, err := wf.ValidateInput(input)
	if err != nil {
		return nil, err
	}
	lits, err := literalsWith(wf, in, env)
	if err != nil {
		return nil, err
	}
	raw, err := InputJSON(in)
	if err != nil {
		return nil, err
	}
	if err := checkInputSize(len(raw)); err != nil {
		return nil, err
	}
	r := &store.Run{ID: ids.New("run"), Target: wf.Name, Status: store.RunQueued, Input: raw, Literals: lits}
	return &Prepared{Run: r, Workflow: wf, Input: in, Env: env}, nil
}

// PrepareParams name a run to prepare.
type PrepareParams struct {
	Target string
	Input  json.RawMessage
	// Env is the environment the run keeps for its steps; nil:
	// CaptureEnv(nil). Launch passes CaptureEnv(Options.EnvPass).
	Env map[string]string
}

// Prepare prepares a run of the named target from this load (see the
// function Prepare): a caller preparing many runs takes one Snapshot and
// checks the folder once.
func (w *Workflows) Prepare(p PrepareParams) (*Prepared, error) {
	wf, err := w.Target(p.Target)
	if err != nil {
		return nil, err
	}
	env := p.Env
	if env == nil {
		env = CaptureEnv(nil)
	}
	return prepare(wf, p.Input, env)
}
