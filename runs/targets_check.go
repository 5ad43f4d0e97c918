package runs

import (
	"slices"

	"github.com/cairnhq/cairn/workflows"
)

// CheckedDirTargets is DirTargets whose workflows must also pass check: a
// workflow it refuses is listed among the load errors with check's error,
// and Target returns that error (workflows.RefuseWarnings makes the
// workflows: unquoted_shell_input: error setting).
func CheckedDirTargets(dir string, check func(*workflows.Workflow) error) Targets {
	return &dirTargets{dir: dir, check: check}
}

// refuse moves the workflows check refuses from byName to the errors.
func (w *Workflows) refuse(check func(*workflows.Workflow) error) {
	if check == nil {
		return
	}
	names := make([]string, 0, len(w.byName))
	for name := range w.byName {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := check(w.byName[name]); err != nil {
			if w.refused == nil {
				w.refused = map[string]error{}
			}
			w.refused[name] = err
			w.errs = append(w.errs, err)
			delete(w.byName, name)
		}
	}
}
