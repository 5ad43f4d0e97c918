package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/store"
)

var _ store.StepStateStore = (*Store)(nil)

func (s *Store) PutStepState(ctx context.Context, runID string, body []byte) error {
	if err := store.CheckStepState(runID); err != nil {
		return err
	}
	return s.write(ctx, "step.put", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO step_states (run_id, body) VALUES ($1, $2)
ON CONFLICT (run_id) DO UPDATE SET body = EXCLUDED.body`, runID, body)
		if err != nil {
			return fmt.Errorf("store step state of run %s: %w", runID, err)
		}
		return nil
	})
}

func (s *Store) GetStepState(ctx context.Context, runID string) ([]byte, error) {
	var body []byte
	err := s.pool.QueryRow(ctx, "SELECT body FROM step_states WHERE run_id = $1", runID).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "step state", ID: runID}
	}
	if err != nil {
		return nil, fmt.Errorf("read step state of run %s: %w", runID, err)
	}
	return body, nil
}

func (s *Store) DeleteStepState(ctx context.Context, runID string) error {
	return s.write(ctx, "step.delete", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "DELETE FROM step_states WHERE run_id = $1", runID); err != nil {
			return fmt.Errorf("delete step state of run %s: %w", runID, err)
		}
		return nil
	})
}
