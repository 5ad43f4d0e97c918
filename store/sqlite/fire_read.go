package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
)

// The reads of a batch of fires: what policy.PlanFire decides from, one
// query per kind for the whole batch.

// fireAutomations reads the automations ps name, by id, with the columns
// policy.PlanFire reads.
func (s *Store) fireAutomations(ctx context.Context, tx *sql.Tx, ps []store.FireParams) (map[string]*store.Automation, error) {
	ids := make([]string, 0, len(ps))
	seen := make(map[string]bool, len(ps))
	for _, p := range ps {
		if !seen[p.AutomationID] {
			seen[p.AutomationID] = true
			ids = append(ids, p.AutomationID)
		}
	}
	arg, err := jsonArg(ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.txQuery(ctx, tx, qFireAutomations, arg)
	if err != nil {
		return nil, fmt.Errorf("read automations to fire: %w", err)
	}
	defer rows.Close()
	out := make(map[string]*store.Automation, len(ids))
	for rows.Next() {
		var (
			a     store.Automation
			state string
		)
		if err := rows.Scan(&a.ID, &a.Key, &a.Enabled, &a.Note, &a.Overlap, &a.Revision, &state); err != nil {
			return nil, fmt.Errorf("read automations to fire: %w", err)
		}
		if a.State, err = s.states.decode(state); err != nil {
			return nil, fmt.Errorf("decode state of automation %s: %w", a.ID, err)
		}
		out[a.ID] = &a
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read automations to fire: %w", err)
	}
	return out, nil
}

// fireLastRuns reads the latest runs of autos that have one in flight
// (status and times), by run id; a run that is gone is absent.
func (s *Store) fireLastRuns(ctx context.Context, tx *sql.Tx, autos map[string]*store.Automation) (map[string]*store.Run, error) {
	ids := make([]string, 0, len(autos))
	for _, a := range autos {
		if a.State.InFlight() { // PlanFire reads the latest run only then
			ids = append(ids, a.State.LastRunID)
		}
	}
	out := make(map[string]*store.Run, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	arg, err := jsonArg(ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.txQuery(ctx, tx, qFireLastRuns, arg)
	if err != nil {
		return nil, fmt.Errorf("read the latest runs of automations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			r        store.Run
			updated  int64
			finished sql.NullInt64
		)
		if err := rows.Scan(&r.ID, &r.Status, &updated, &finished); err != nil {
			return nil, fmt.Errorf("read the latest runs of automations: %w", err)
		}
		r.UpdatedAt, r.FinishedAt = millisTime(updated), timeOf(finished)
		out[r.ID] = &r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the latest runs of automations: %w", err)
	}
	return out, nil
}

// fireExisting reads the fires already recorded at the slots ps name.
func (s *Store) fireExisting(ctx context.Context, tx *sql.Tx, ps []store.FireParams) (map[fireKey]*store.AutomationFire, error) {
	keys := make([][2]any, len(ps))
	for i, p := range ps {
		keys[i] = [2]any{p.AutomationID, p.Nominal.UTC().Truncate(time.Millisecond).UnixMilli()}
	}
	arg, err := jsonArg(keys)
	if err != nil {
		return nil, err
	}
	rows, err := s.txQuery(ctx, tx, qFireExisting, arg)
	if err != nil {
		return nil, fmt.Errorf("read recorded fires: %w", err)
	}
	defer rows.Close()
	out := make(map[fireKey]*store.AutomationFire)
	for rows.Next() {
		f, err := scanFire(rows)
		if err != nil {
			return nil, fmt.Errorf("read recorded fires: %w", err)
		}
		out[fireKey{f.AutomationID, f.Nominal.UnixMilli()}] = f
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read recorded fires: %w", err)
	}
	return out, nil
}
