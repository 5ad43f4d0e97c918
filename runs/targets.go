package runs

import (
	"github.com/cairnhq/cairn/workflows"
)

// Targets is where the engine finds what it can launch.
type Targets interface {
	// Target returns the workflow named name: a *workflows.NotFoundError
	// when there is none, the load error (file, line, field) when its file
	// is broken, an *ids.InvalidError for a name that is not an id.
	Target(name string) (*workflows.Workflow, error)
	// List returns every loadable workflow by name, and the errors of the
	// files that did not load.
	List() (map[string]*workflows.Workflow, []error)
}

// DirTargets reads the workflow files in dir (normally
// Workspace.WorkflowsDir()) on every call, so edits show at once.
func DirTargets(dir string) Targets { return dirTargets(dir) }

type dirTargets string

func (d dirTargets) Target(name string) (*workflows.Workflow, error) {
	return workflows.Load(string(d), name)
}

func (d dirTargets) List() (map[string]*workflows.Workflow, []error) {
	return workflows.LoadDir(string(d))
}
