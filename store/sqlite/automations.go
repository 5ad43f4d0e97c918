package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cairnhq/cairn/store"
)

const automationColumns = "id, owner, key, target, input, trigger, enabled, note, overlap, missed, source, revision, created_at, updated_at, state"

// queryer is *sql.DB or *sql.Tx.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *Store) CreateAutomation(ctx context.Context, a *store.Automation) error {
	store.PrepareNew(a)
	trig, err := json.Marshal(a.Trigger)
	if err != nil {
		return err
	}
	st, err := json.Marshal(a.State)
	if err != nil {
		return err
	}
	return s.write(ctx, "automation.create", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "INSERT INTO automations ("+automationColumns+") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
			a.ID, a.Owner, a.Key, a.Target, string(a.Input), string(trig), a.Enabled, a.Note, a.Overlap, a.Missed, a.Source, a.Revision, a.CreatedAt.UnixMilli(), a.UpdatedAt.UnixMilli(), string(st))
		if err != nil {
			return fmt.Errorf("insert automation %s: %w", a.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			existing, err := getAutomationByKey(ctx, tx, a.Owner, a.Key)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("create automation %s: %w", a.ID, store.ErrExists)
			}
			if err != nil {
				return err
			}
			return &store.AutomationExistsError{Existing: existing}
		}
		return bumpAutomationsVersion(ctx, tx)
	})
}

func bumpAutomationsVersion(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, "UPDATE automations_version SET version = version + 1 WHERE id = 1"); err != nil {
		return fmt.Errorf("bump automations version: %w", err)
	}
	return nil
}

func (s *Store) GetAutomation(ctx context.Context, id string) (*store.Automation, error) {
	return getAutomation(ctx, s.r, id)
}

func getAutomation(ctx context.Context, q queryer, id string) (*store.Automation, error) {
	a, err := scanAutomation(q.QueryRowContext(ctx, "SELECT "+automationColumns+" FROM automations WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "automation", ID: id}
	}
	return a, err
}

func getAutomationByKey(ctx context.Context, q queryer, owner, key string) (*store.Automation, error) {
	return scanAutomation(q.QueryRowContext(ctx, "SELECT "+automationColumns+" FROM automations WHERE owner = ? AND key = ?", owner, key))
}

func (s *Store) ListAutomations(ctx context.Context, f store.AutomationFilter) ([]*store.Automation, error) {
	var where []string
	var args []any
	if f.Owner != "" {
		where, args = append(where, "owner = ?"), append(args, f.Owner)
	}
	if f.Key != "" {
		where, args = append(where, "key = ?"), append(args, f.Key)
	}
	q := "SELECT " + automationColumns + " FROM automations"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := s.r.QueryContext(ctx, q+" ORDER BY owner, key", args...)
	if err != nil {
		return nil, fmt.Errorf("list automations: %w", err)
	}
	defer rows.Close()
	out := []*store.Automation{}
	for rows.Next() {
		a, err := scanAutomation(rows)
		if err != nil {
			return nil, fmt.Errorf("list automations: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list automations: %w", err)
	}
	return out, nil
}

func (s *Store) UpdateAutomation(ctx context.Context, a *store.Automation, expected int64) error {
	now := a.UpdatedAt
	if now.IsZero() {
		now = time.Now()
	}
	var out *store.Automation
	err := s.write(ctx, "automation.update", func(tx *sql.Tx) error {
		cur, err := getAutomation(ctx, tx, a.ID)
		if err != nil {
			return err
		}
		if cur.Revision != expected {
			return &store.StaleError{Kind: "automation", ID: a.ID, Expected: expected, Actual: cur.Revision}
		}
		next := store.ApplyUpdate(cur, a, now)
		trig, err := json.Marshal(next.Trigger)
		if err != nil {
			return err
		}
		st, err := json.Marshal(next.State)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE automations SET target = ?, input = ?, trigger = ?, enabled = ?, note = ?, overlap = ?, missed = ?, source = ?, revision = ?, updated_at = ?, state = ? WHERE id = ?",
			next.Target, string(next.Input), string(trig), next.Enabled, next.Note, next.Overlap, next.Missed, next.Source, next.Revision, next.UpdatedAt.UnixMilli(), string(st), next.ID); err != nil {
			return fmt.Errorf("update automation %s: %w", a.ID, err)
		}
		out = next
		return bumpAutomationsVersion(ctx, tx)
	})
	if err != nil {
		return err
	}
	*a = *out
	return nil
}

func (s *Store) DeleteAutomation(ctx context.Context, id string, expected int64) error {
	return s.write(ctx, "automation.delete", func(tx *sql.Tx) error {
		var rev int64
		err := tx.QueryRowContext(ctx, "SELECT revision FROM automations WHERE id = ?", id).Scan(&rev)
		if errors.Is(err, sql.ErrNoRows) {
			return &store.NotFoundError{Kind: "automation", ID: id}
		}
		if err != nil {
			return fmt.Errorf("delete automation %s: %w", id, err)
		}
		if expected != 0 && rev != expected {
			return &store.StaleError{Kind: "automation", ID: id, Expected: expected, Actual: rev}
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM automation_fires WHERE automation_id = ?", id); err != nil {
			return fmt.Errorf("delete automation %s: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM automations WHERE id = ?", id); err != nil {
			return fmt.Errorf("delete automation %s: %w", id, err)
		}
		return bumpAutomationsVersion(ctx, tx)
	})
}

func (s *Store) Fire(ctx context.Context, p store.FireParams) (store.FireResult, error) {
	var res store.FireResult
	err := s.write(ctx, "automation.fire", func(tx *sql.Tx) error {
		a, err := getAutomation(ctx, tx, p.AutomationID)
		if err != nil {
			return err
		}
		var last *store.Run
		if a.State.LastRunID != "" {
			var status string
			err := tx.QueryRowContext(ctx, "SELECT status FROM runs WHERE id = ?", a.State.LastRunID).Scan(&status)
			switch {
			case err == nil:
				last = &store.Run{ID: a.State.LastRunID, Status: store.RunStatus(status)}
			case !errors.Is(err, sql.ErrNoRows):
				return fmt.Errorf("fire automation %s: read last run: %w", a.ID, err)
			}
		}
		nominal := p.Nominal.UTC().Truncate(time.Millisecond)
		existing, err := scanFire(tx.QueryRowContext(ctx, "SELECT automation_id, nominal, actual, outcome, run_id, manual FROM automation_fires WHERE automation_id = ? AND nominal = ?", a.ID, nominal.UnixMilli()))
		if errors.Is(err, sql.ErrNoRows) {
			existing, err = nil, nil
		}
		if err != nil {
			return fmt.Errorf("fire automation %s: %w", a.ID, err)
		}
		plan, err := store.PlanFire(a, last, existing, p)
		if err != nil {
			return err
		}
		res = plan.Result
		if !plan.Insert && !plan.Update {
			return nil
		}
		if plan.QueueRun {
			if err := s.insertRun(ctx, tx, plan.Result.Run); err != nil {
				return err
			}
		}
		f := plan.Result.Fire
		if plan.Insert {
			if _, err := tx.ExecContext(ctx, "INSERT INTO automation_fires (automation_id, nominal, actual, outcome, run_id, manual) VALUES (?,?,?,?,?,?)",
				f.AutomationID, f.Nominal.UnixMilli(), f.Actual.UnixMilli(), f.Outcome, f.RunID, f.Manual); err != nil {
				return fmt.Errorf("record fire of automation %s: %w", a.ID, err)
			}
			// Prune every FireHistory fires, keeping the newest FireHistory:
			// at most twice that many rows stay, and ListFires returns the
			// newest FireHistory.
			if (plan.State.Fires+plan.State.Skipped)%store.FireHistory == 0 {
				if _, err := tx.ExecContext(ctx, "DELETE FROM automation_fires WHERE automation_id = ? AND nominal < (SELECT nominal FROM automation_fires WHERE automation_id = ? ORDER BY nominal DESC LIMIT 1 OFFSET ?)",
					a.ID, a.ID, store.FireHistory-1); err != nil {
					return fmt.Errorf("prune fires of automation %s: %w", a.ID, err)
				}
			}
		} else {
			if _, err := tx.ExecContext(ctx, "UPDATE automation_fires SET outcome = ?, run_id = ? WHERE automation_id = ? AND nominal = ?",
				f.Outcome, f.RunID, f.AutomationID, f.Nominal.UnixMilli()); err != nil {
				return fmt.Errorf("record fire of automation %s: %w", a.ID, err)
			}
		}
		return writeState(ctx, tx, a.ID, plan.State)
	})
	if err != nil {
		return store.FireResult{}, err
	}
	return res, nil
}

func writeState(ctx context.Context, tx *sql.Tx, id string, st store.AutomationState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE automations SET state = ? WHERE id = ?", string(b), id); err != nil {
		return fmt.Errorf("record state of automation %s: %w", id, err)
	}
	return nil
}

func (s *Store) RecordAutomation(ctx context.Context, p store.RecordParams) (*store.Automation, error) {
	var out *store.Automation
	err := s.write(ctx, "automation.record", func(tx *sql.Tx) error {
		a, err := getAutomation(ctx, tx, p.AutomationID)
		if err != nil {
			return err
		}
		st, err := store.ApplyRecord(a, p)
		if err != nil {
			return err
		}
		a.State = st
		out = a
		return writeState(ctx, tx, a.ID, st)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) ListFires(ctx context.Context, automationID string, limit int) ([]*store.AutomationFire, error) {
	if limit <= 0 || limit > store.FireHistory {
		limit = store.FireHistory
	}
	rows, err := s.r.QueryContext(ctx, "SELECT automation_id, nominal, actual, outcome, run_id, manual FROM automation_fires WHERE automation_id = ? ORDER BY nominal DESC LIMIT ?", automationID, limit)
	if err != nil {
		return nil, fmt.Errorf("list fires of automation %s: %w", automationID, err)
	}
	defer rows.Close()
	out := []*store.AutomationFire{}
	for rows.Next() {
		f, err := scanFire(rows)
		if err != nil {
			return nil, fmt.Errorf("list fires of automation %s: %w", automationID, err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list fires of automation %s: %w", automationID, err)
	}
	return out, nil
}

func (s *Store) AutomationsVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.r.QueryRowContext(ctx, "SELECT version FROM automations_version WHERE id = 1").Scan(&v); err != nil {
		return 0, fmt.Errorf("read automations version: %w", err)
	}
	return v, nil
}

func scanAutomation(row rowScanner) (*store.Automation, error) {
	var (
		a                  store.Automation
		input, trig, state string
		created, updated   int64
	)
	if err := row.Scan(&a.ID, &a.Owner, &a.Key, &a.Target, &input, &trig, &a.Enabled, &a.Note, &a.Overlap, &a.Missed, &a.Source, &a.Revision, &created, &updated, &state); err != nil {
		return nil, err
	}
	a.Input = json.RawMessage(input)
	if err := json.Unmarshal([]byte(trig), &a.Trigger); err != nil {
		return nil, fmt.Errorf("decode trigger of automation %s: %w", a.ID, err)
	}
	if err := json.Unmarshal([]byte(state), &a.State); err != nil {
		return nil, fmt.Errorf("decode state of automation %s: %w", a.ID, err)
	}
	a.CreatedAt = time.UnixMilli(created).UTC()
	a.UpdatedAt = time.UnixMilli(updated).UTC()
	return &a, nil
}

func scanFire(row rowScanner) (*store.AutomationFire, error) {
	var (
		f               store.AutomationFire
		nominal, actual int64
	)
	if err := row.Scan(&f.AutomationID, &nominal, &actual, &f.Outcome, &f.RunID, &f.Manual); err != nil {
		return nil, err
	}
	f.Nominal = time.UnixMilli(nominal).UTC()
	f.Actual = time.UnixMilli(actual).UTC()
	f.Lag = f.Actual.Sub(f.Nominal)
	return &f, nil
}
