package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/store"
)

// The reads of a batch of fires: what policy.PlanFire decides from, one
// query per kind for the whole batch.

// lockFireAutomations reads and locks the automations ps name, in id
// order, by id.
func lockFireAutomations(ctx context.Context, tx pgx.Tx, ps []store.FireParams) (map[string]*store.Automation, error) {
	ids := make([]string, 0, len(ps))
	for _, p := range ps {
		ids = append(ids, p.AutomationID)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	rows, err := tx.Query(ctx, "SELECT "+automationColumns+" FROM automations WHERE id = ANY($1) ORDER BY id FOR UPDATE", ids)
	if err != nil {
		return nil, fmt.Errorf("read automations to fire: %w", err)
	}
	list, err := collect(rows, scanAutomation)
	if err != nil {
		return nil, fmt.Errorf("read automations to fire: %w", err)
	}
	out := make(map[string]*store.Automation, len(list))
	for _, a := range list {
		out[a.ID] = a
	}
	return out, nil
}

// fireLastRuns reads the latest runs of autos that have one in flight
// (status and times), by run id; a run that is gone is absent.
func fireLastRuns(ctx context.Context, tx pgx.Tx, autos map[string]*store.Automation) (map[string]*store.Run, error) {
	var ids []string
	for _, a := range autos {
		if a.State.InFlight() { // PlanFire reads the latest run only then
			ids = append(ids, a.State.LastRunID)
		}
	}
	out := make(map[string]*store.Run, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, "SELECT id, status, updated_at, finished_at FROM runs WHERE id = ANY($1)", ids)
	if err != nil {
		return nil, fmt.Errorf("read the latest runs of automations: %w", err)
	}
	list, err := collect(rows, func(row pgx.Row) (*store.Run, error) {
		var (
			r        store.Run
			finished *time.Time
		)
		if err := row.Scan(&r.ID, &r.Status, &r.UpdatedAt, &finished); err != nil {
			return nil, err
		}
		r.UpdatedAt = r.UpdatedAt.UTC()
		if finished != nil {
			r.FinishedAt = finished.UTC()
		}
		return &r, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the latest runs of automations: %w", err)
	}
	for _, r := range list {
		out[r.ID] = r
	}
	return out, nil
}

// fireExisting reads the fires already recorded at the slots ps name.
func fireExisting(ctx context.Context, tx pgx.Tx, ps []store.FireParams) (map[fireKey]*store.AutomationFire, error) {
	ids := make([]string, len(ps))
	nominals := make([]time.Time, len(ps))
	for i, p := range ps {
		ids[i], nominals[i] = p.AutomationID, store.Millis(p.Nominal)
	}
	rows, err := tx.Query(ctx, "SELECT "+fireColumns+" FROM automation_fires WHERE (automation_id, nominal) IN (SELECT * FROM unnest($1::text[], $2::timestamptz[]))", ids, nominals)
	if err != nil {
		return nil, fmt.Errorf("read recorded fires: %w", err)
	}
	list, err := collect(rows, func(row pgx.Row) (*store.AutomationFire, error) { return scanFire(row) })
	if err != nil {
		return nil, fmt.Errorf("read recorded fires: %w", err)
	}
	out := make(map[fireKey]*store.AutomationFire, len(list))
	for _, f := range list {
		out[fireKey{f.AutomationID, f.Nominal.UnixMilli()}] = f
	}
	return out, nil
}

// collect scans every row with scan.
func collect[T any](rows pgx.Rows, scan func(pgx.Row) (T, error)) ([]T, error) {
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// deleteFiresOfTx deletes, inside tx, the fire history rows that name the
// runs ids (DeleteRuns).
func (s *Store) deleteFiresOfTx(ctx context.Context, tx pgx.Tx, ids []string) error {
	if _, err := tx.Exec(ctx, "DELETE FROM automation_fires WHERE run_id = ANY($1)", ids); err != nil {
		return fmt.Errorf("delete the fires of runs: %w", err)
	}
	return nil
}
