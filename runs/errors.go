package runs

import (
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/store"
)

// StateError refuses an operation the run's status does not allow, e.g.
// "run run_x is not waiting (status: succeeded)" for an answer.
type StateError = store.RunStateError

// ErrStopped is returned by an Engine after Stop.
var ErrStopped = errors.New("run engine is stopped")

// AnswerError refuses an answer that the question does not accept.
type AnswerError struct {
	RunID   string
	Answer  string
	Choices []string
	Reason  string
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("answer run %s: %s", e.RunID, e.Reason)
}

// errCancelRequested, errStopping and errLost are the causes an
// execution's context is cancelled with.
var (
	errCancelRequested = errors.New("cancel requested")
	errStopping        = errors.New("engine stopping")
	errLost            = errors.New("run taken over by another process")
)
