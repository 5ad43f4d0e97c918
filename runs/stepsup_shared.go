package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

// A store shared by several machines keeps the step file too
// (store.StepStateStore): the run's next owner may be on another machine,
// where this one's output folder is not. The supervisor writes the step
// state to its step file and to the store; an engine whose store keeps
// step states reads the store's, the one every machine sees.

// errStepStore wraps a failed read of the store's step state: unlike a
// torn step file it says nothing about the call, so the run is let go.
var errStepStore = errors.New("read the step state in the store")

// stepStoreTimeout bounds one step state read or write.
const stepStoreTimeout = 30 * time.Second

// stepStates is where e reads step states: the store's when it keeps
// them in leases mode; nil: the step files.
func (e *Engine) stepStates() store.StepStateStore {
	if !e.opts.leases() || e.opts.InMemory {
		return nil
	}
	return store.StepStates(e.st)
}

// readStep reads the run's step state: the store's, else its step file;
// nil when there is none.
func (x *execution) readStep() (*stepState, error) {
	ss := x.e.stepStates()
	if ss == nil {
		return readStepState(x.stepFile())
	}
	ctx, cancel := context.WithTimeout(x.sctx(), stepStoreTimeout)
	defer cancel()
	b, err := ss.GetStepState(ctx, x.id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errStepStore, err)
	}
	var s stepState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("read the step state of run %s in the store: %w", x.id, err)
	}
	return &s, nil
}

// removeStepState deletes the store's step state of run id, when the
// store keeps them.
func (e *Engine) removeStepState(id string) {
	ss := e.stepStates()
	if ss == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stepStoreTimeout)
	defer cancel()
	if err := ss.DeleteStepState(ctx, id); err != nil {
		e.log.Warn("remove step state", "run", id, "err", err)
	}
}

// stepRecorder is where a supervisor records its step state: the step
// file, and the store when it keeps step states.
type stepRecorder struct {
	path  string
	runID string
	ss    store.StepStateStore // nil: the step file alone
}

// newStepRecorder records into spec's step file and, for a lease held in a
// store that keeps step states, into that store.
func newStepRecorder(spec stepSpec, lock stepLock) *stepRecorder {
	r := &stepRecorder{path: stepFilePath(spec.OutputDir, spec.RunID), runID: spec.RunID}
	if l, ok := lock.(*leaseStepLock); ok {
		r.ss = store.StepStates(l.st)
	}
	return r
}

// write records s: in the step file (durably when durable, see
// writeStepState), then in the store.
func (r *stepRecorder) write(s *stepState, durable bool) error {
	s.Boot = locks.BootID()
	if err := writeStepState(r.path, s, durable); err != nil || r.ss == nil {
		return err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode step state: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), stepStoreTimeout)
	defer cancel()
	return r.ss.PutStepState(ctx, r.runID, b)
}

// onThisMachine reports whether s was recorded in this boot of this
// machine, so that its pids name processes here.
func (s *stepState) onThisMachine() bool {
	return s.Boot == "" || s.Boot == locks.BootID()
}
