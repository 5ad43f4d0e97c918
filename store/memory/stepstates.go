package memory

import (
	"context"
	"slices"

	"github.com/cairnhq/cairn/store"
)

var _ store.StepStateStore = (*Store)(nil)

func (s *Store) PutStepState(ctx context.Context, runID string, body []byte) error {
	if err := store.CheckStepState(runID); err != nil {
		return err
	}
	return s.write(ctx, "step.put", func() error {
		if s.stepStates == nil {
			s.stepStates = map[string][]byte{}
		}
		s.stepStates[runID] = slices.Clone(body)
		return nil
	})
}

func (s *Store) GetStepState(ctx context.Context, runID string) ([]byte, error) {
	var body []byte
	err := s.read(func() error {
		b, ok := s.stepStates[runID]
		if !ok {
			return &store.NotFoundError{Kind: "step state", ID: runID}
		}
		body = slices.Clone(b)
		return nil
	})
	return body, err
}

func (s *Store) DeleteStepState(ctx context.Context, runID string) error {
	return s.write(ctx, "step.delete", func() error {
		delete(s.stepStates, runID)
		return nil
	})
}
