package store

import (
	"context"
	"fmt"

	"github.com/cairnhq/cairn/internal/ids"
)

// StepStateStore keeps what step supervisors record of their calls (the
// run engine's step file: which call, its supervisor, its result) in the
// store, for hosts that share one from several machines: a run adopted on
// another machine finds there the result of a step whose supervisor ran
// on the first. Optional, as JournalStore: on one machine the step file
// under output/ does. The body is the engine's, stored as given. Safe for
// concurrent use from many processes.
type StepStateStore interface {
	// PutStepState replaces run runID's step state with body.
	PutStepState(ctx context.Context, runID string, body []byte) error
	// GetStepState returns run runID's step state; an error wrapping
	// ErrNotFound when none is stored.
	GetStepState(ctx context.Context, runID string) ([]byte, error)
	// DeleteStepState deletes run runID's step state; none is no error.
	DeleteStepState(ctx context.Context, runID string) error
}

// StepStates returns s's StepStateStore when it keeps step states, else
// nil.
func StepStates(s any) StepStateStore {
	m, _ := s.(StepStateStore)
	return m
}

// CheckStepState validates a step state's run id, for every backend alike.
func CheckStepState(runID string) error {
	if err := ids.Validate("run id", runID); err != nil {
		return fmt.Errorf("store step state: %w", err)
	}
	return nil
}
