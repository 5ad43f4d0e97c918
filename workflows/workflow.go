package workflows

import (
	"encoding/json"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cairnhq/cairn/store"
)

// MaxFileSize is the largest workflow file accepted (1 MiB).
const MaxFileSize = 1 << 20

// Workflow is one parsed, validated workflow file. It is immutable after
// Parse and safe for concurrent use; callers must not modify its fields.
type Workflow struct {
	Name        string // the `name:` field, else the file name without .yaml/.yml
	Description string
	File        string // the name given to Parse (a path or a file name)
	Steps       []*Step
	Result      *Template // nil when the file has no `result:`
	On          []Trigger
	// Source is the file exactly as parsed. The run engine stores File and
	// Source as the run's literals; Parse(File, Source) gives the same
	// workflow back, whatever the file on disk says by then.
	Source []byte
	// Warnings are problems that do not stop the workflow from loading,
	// in line order: a shell: step interpolating input without shellQuote
	// (wrapping ErrUnquotedShellInput).
	Warnings []*Error

	schemaJSON []byte             // the input schema as JSON; nil when none
	schema     *jsonschema.Schema // compiled input schema; nil when none
	defaults   map[string]any     // top-level property defaults

	// Finally are the `finally:` steps: they run once the steps are done,
	// whether the run succeeded, failed or was cancelled (run.status and
	// run.failed_step say which). Their ids are unique across both lists.
	Finally []*Step
}

// StepKind is what a step does.
type StepKind string

// The step kinds; each step has exactly one.
const (
	KindExec  StepKind = "exec"
	KindShell StepKind = "shell"
	KindAsk   StepKind = "ask"
	KindSleep StepKind = "sleep"
	KindHTTP  StepKind = "http"
)

// Step is one step of a workflow. Exactly one of Exec, Shell, Ask, Sleep
// and HTTP is set, as Kind says.
type Step struct {
	ID   string
	Kind StepKind
	Line int // line of the step in the file

	If *Expr // nil: the step always runs
	// Timeout bounds the step (exec, shell, http); for ask it is how long
	// the question waits before Ask.Default is used (or the step fails when
	// there is no default). 0: no timeout set.
	Timeout      time.Duration
	Retry        Retry
	SafeToRepeat bool                 // resolved: the file's value or the kind's default
	Env          map[string]*Template // exec and shell only
	// Dir is the working directory of exec and shell steps: slash-separated,
	// relative to the workspace; "." by default. When it holds `${{ }}` it
	// is the template's text: use RenderDir.
	Dir    string
	dir    *Template // set when Dir holds expressions
	Output Output    // exec and shell: where the step's output goes

	Exec  []*Template   // argv; Exec[0] is the program
	Shell *Template     // script for `sh -c`
	Ask   *Ask          //
	Sleep time.Duration // durable sleep
	HTTP  *HTTPRequest  //

	// ContinueOnError: when the step fails (after its retries) the run
	// goes on; the step stays recorded failed (steps.ID.status).
	ContinueOnError bool
}

// Output says where an exec or shell step's output goes.
type Output string

const (
	// OutputJournal (the default) writes each line to the run's journal,
	// under its caps.
	OutputJournal Output = ""
	// OutputFile keeps the step's whole output, stdout and stderr lines
	// in order, in a file in the run's folder (runs.MaxOutputFileBytes at
	// most); the journal holds a record naming the file.
	OutputFile Output = "file"
)

// Retry says how often a failed step is tried (exec, shell, http).
type Retry struct {
	Attempts int           // total tries, >= 1; 1 means no retry
	Backoff  time.Duration // wait between tries
}

// Ask is a question that parks the run until someone answers.
type Ask struct {
	Text    *Template
	Choices []string // empty: any answer is accepted
	// Default is the answer used when the step's Timeout passes; it is
	// only set (HasDefault) together with a timeout.
	Default    string
	HasDefault bool
	// For is AskForHuman when only a person may answer (`for: human`):
	// agents' answers are refused, and a client that offers elicitation
	// asks its user.
	For string
}

// AskForHuman is Ask.For of a question for a person.
const AskForHuman = "human"

// HTTPRequest is an http step.
type HTTPRequest struct {
	Method  string // upper case; GET by default
	URL     *Template
	Headers map[string]*Template
	Body    *Template // nil: no body
	// ExpectStatus lists the accepted status codes; empty means any 2xx.
	ExpectStatus []int
}

// TriggerKind is the kind of an `on:` entry.
type TriggerKind string

// The trigger kinds. Those an automation stores under the same name are
// the store's values; "every" is stored as an interval.
const (
	TriggerCron  TriggerKind = store.TriggerCron
	TriggerEvery TriggerKind = "every"
	TriggerFiles TriggerKind = store.TriggerFiles
	TriggerHTTP  TriggerKind = store.TriggerHTTP
)

// Trigger is one `on:` entry, with raw strings: the automations package
// validates the cron expression and the time zone.
type Trigger struct {
	Kind  TriggerKind
	Cron  string        // cron: the expression
	TZ    string        // cron: IANA zone name; "" means local
	Every time.Duration // every: the interval; files/http: the poll interval (0: the engine's default)
	Files []string      // files: workspace-relative globs, slash-separated
	URL   string        // http: the polled URL (http or https, no credentials)
	Line  int
}

// Step returns the step with the given id, among Steps and Finally.
func (w *Workflow) Step(id string) (*Step, bool) {
	for _, list := range [][]*Step{w.Steps, w.Finally} {
		for _, s := range list {
			if s.ID == id {
				return s, true
			}
		}
	}
	return nil, false
}

// InputSchema returns the input JSON Schema as JSON; a workflow without
// one accepts any object: {"type":"object"}.
func (w *Workflow) InputSchema() json.RawMessage {
	if w.schemaJSON == nil {
		return json.RawMessage(`{"type":"object"}`)
	}
	return append(json.RawMessage(nil), w.schemaJSON...)
}
