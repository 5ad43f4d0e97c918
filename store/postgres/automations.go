package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/automations/policy"
	"github.com/cairnhq/cairn/store"
)

// Every write of an automation locks its row first (FOR UPDATE), so the
// fires, records and edits of one automation, from any number of hosts,
// take turns and each decides from the row as the previous one left it.

const automationColumns = "id, owner, key, target, input, trigger, enabled, note, overlap, missed, source, revision, created_at, updated_at, state, approval"

const (
	qAutomationByID     = "SELECT " + automationColumns + " FROM automations WHERE id = $1"
	qLockAutomation     = qAutomationByID + " FOR UPDATE"
	qAutomationByKey    = "SELECT " + automationColumns + " FROM automations WHERE owner = $1 AND key = $2"
	qBumpAutomationsVer = "UPDATE automations_version SET version = version + 1 WHERE id = 1"
	qWriteState         = "UPDATE automations SET state = $2 WHERE id = $1"
)

func (s *Store) CreateAutomation(ctx context.Context, a *store.Automation) error {
	policy.PrepareNew(a)
	trig, st, err := encodeAutomation(a)
	if err != nil {
		return err
	}
	return s.write(ctx, "automation.create", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "INSERT INTO automations ("+automationColumns+") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16) ON CONFLICT DO NOTHING",
			a.ID, a.Owner, a.Key, a.Target, string(a.Input), trig, a.Enabled, a.Note, a.Overlap, a.Missed, a.Source, a.Revision, a.CreatedAt, a.UpdatedAt, st, a.Approval)
		if err != nil {
			return fmt.Errorf("insert automation %s: %w", a.ID, err)
		}
		if tag.RowsAffected() == 0 {
			existing, err := scanAutomation(tx.QueryRow(ctx, qAutomationByKey, a.Owner, a.Key))
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("create automation %s: %w", a.ID, store.ErrExists)
			}
			if err != nil {
				return fmt.Errorf("create automation %s: %w", a.ID, err)
			}
			return &store.AutomationExistsError{Existing: existing}
		}
		return bumpAutomationsVersion(ctx, tx)
	})
}

// encodeAutomation returns a's trigger and state as stored.
func encodeAutomation(a *store.Automation) (trig, state string, err error) {
	t, err := json.Marshal(a.Trigger)
	if err != nil {
		return "", "", fmt.Errorf("encode trigger of automation %s: %w", a.ID, err)
	}
	st, err := encodeState(a.ID, a.State)
	if err != nil {
		return "", "", err
	}
	return string(t), st, nil
}

func bumpAutomationsVersion(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, qBumpAutomationsVer); err != nil {
		return fmt.Errorf("bump automations version: %w", err)
	}
	return nil
}

func (s *Store) GetAutomation(ctx context.Context, id string) (*store.Automation, error) {
	return automationOrNotFound(s.pool.QueryRow(ctx, qAutomationByID, id), id)
}

// lockAutomation reads one automation inside tx and locks its row until
// the transaction ends.
func lockAutomation(ctx context.Context, tx pgx.Tx, id string) (*store.Automation, error) {
	return automationOrNotFound(tx.QueryRow(ctx, qLockAutomation, id), id)
}

func automationOrNotFound(row pgx.Row, id string) (*store.Automation, error) {
	a, err := scanAutomation(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "automation", ID: id}
	}
	if err != nil {
		return nil, fmt.Errorf("read automation %s: %w", id, err)
	}
	return a, nil
}

func (s *Store) ListAutomations(ctx context.Context, f store.AutomationFilter) ([]*store.Automation, error) {
	var (
		conds []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Owner != "" {
		conds = append(conds, "owner = "+arg(f.Owner))
	}
	if f.Key != "" {
		conds = append(conds, "key = "+arg(f.Key))
	}
	if f.After != nil {
		conds = append(conds, "(owner, key) > ("+arg(f.After.Owner)+", "+arg(f.After.Key)+")")
	}
	q := "SELECT " + automationColumns + " FROM automations"
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	q += " ORDER BY owner, key"
	if f.Limit > 0 {
		q += " LIMIT " + arg(f.Limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list automations: %w", err)
	}
	out, err := collect(rows, scanAutomation)
	if err != nil {
		return nil, fmt.Errorf("list automations: %w", err)
	}
	return out, nil
}

func (s *Store) UpdateAutomation(ctx context.Context, a *store.Automation, expected int64) error {
	var out *store.Automation
	err := s.write(ctx, "automation.update", func(tx pgx.Tx) error {
		cur, err := lockAutomation(ctx, tx, a.ID)
		if err != nil {
			return err
		}
		if cur.Revision != expected {
			return &store.StaleError{Kind: "automation", ID: a.ID, Expected: expected, Actual: cur.Revision}
		}
		next := policy.ApplyUpdate(cur, a, a.UpdatedAt)
		trig, st, err := encodeAutomation(next)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "UPDATE automations SET target = $2, input = $3, trigger = $4, enabled = $5, note = $6, overlap = $7, missed = $8, source = $9, revision = $10, updated_at = $11, state = $12, approval = $13 WHERE id = $1",
			next.ID, next.Target, string(next.Input), trig, next.Enabled, next.Note, next.Overlap, next.Missed, next.Source, next.Revision, next.UpdatedAt, st, next.Approval); err != nil {
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
	return s.write(ctx, "automation.delete", func(tx pgx.Tx) error {
		var rev int64
		err := tx.QueryRow(ctx, "SELECT revision FROM automations WHERE id = $1 FOR UPDATE", id).Scan(&rev)
		if errors.Is(err, pgx.ErrNoRows) {
			return &store.NotFoundError{Kind: "automation", ID: id}
		}
		if err != nil {
			return fmt.Errorf("delete automation %s: %w", id, err)
		}
		if expected != 0 && rev != expected {
			return &store.StaleError{Kind: "automation", ID: id, Expected: expected, Actual: rev}
		}
		// Its fires go with it (ON DELETE CASCADE).
		if _, err := tx.Exec(ctx, "DELETE FROM automations WHERE id = $1", id); err != nil {
			return fmt.Errorf("delete automation %s: %w", id, err)
		}
		return bumpAutomationsVersion(ctx, tx)
	})
}

func (s *Store) RecordAutomation(ctx context.Context, p store.RecordParams) (*store.Automation, error) {
	var out *store.Automation
	err := s.write(ctx, "automation.record", func(tx pgx.Tx) error {
		if err := checkFencesTx(ctx, tx, p.Lease); err != nil {
			return err
		}
		a, err := lockAutomation(ctx, tx, p.AutomationID)
		if err != nil {
			return err
		}
		next, paused, err := policy.PlanRecord(a, p)
		if err != nil {
			return err
		}
		out = next
		if !paused {
			return writeState(ctx, tx, a.ID, next.State)
		}
		return s.writePause(ctx, tx, next, p.Pause)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// writePause stores next, an automation a record paused, with the
// pause's notifications, inside tx.
func (s *Store) writePause(ctx context.Context, tx pgx.Tx, next *store.Automation, p *store.PauseParams) error {
	_, st, err := encodeAutomation(next)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "UPDATE automations SET enabled = $2, note = $3, revision = $4, updated_at = $5, state = $6 WHERE id = $1",
		next.ID, next.Enabled, next.Note, next.Revision, next.UpdatedAt, st); err != nil {
		return fmt.Errorf("pause automation %s: %w", next.ID, err)
	}
	if err := s.enqueueAllTx(ctx, tx, p.Notify, p.At); err != nil {
		return err
	}
	return bumpAutomationsVersion(ctx, tx)
}

// writeState records an automation's state inside tx.
func writeState(ctx context.Context, tx pgx.Tx, id string, st store.AutomationState) error {
	text, err := encodeState(id, st)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, qWriteState, id, text); err != nil {
		return fmt.Errorf("record state of automation %s: %w", id, err)
	}
	return nil
}

// encodeState returns the state of automation id as stored.
func encodeState(id string, st store.AutomationState) (string, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("encode state of automation %s: %w", id, err)
	}
	return string(b), nil
}

func (s *Store) ListFires(ctx context.Context, automationID string, limit int) ([]*store.AutomationFire, error) {
	if limit <= 0 || limit > store.FireHistory {
		limit = store.FireHistory
	}
	rows, err := s.pool.Query(ctx, "SELECT f.automation_id, f.nominal, f.actual, f.outcome, f.run_id, f.manual, COALESCE(r.status, '') FROM automation_fires AS f "+
		"LEFT JOIN runs AS r ON f.run_id <> '' AND r.id = f.run_id WHERE f.automation_id = $1 ORDER BY f.nominal DESC LIMIT $2", automationID, limit)
	if err != nil {
		return nil, fmt.Errorf("list fires of automation %s: %w", automationID, err)
	}
	out, err := collect(rows, func(row pgx.Row) (*store.AutomationFire, error) {
		var status string
		f, err := scanFire(row, &status)
		if err == nil {
			f.RunStatus = store.RunStatus(status)
		}
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("list fires of automation %s: %w", automationID, err)
	}
	return out, nil
}

func (s *Store) AutomationsVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.pool.QueryRow(ctx, "SELECT version FROM automations_version WHERE id = 1").Scan(&v); err != nil {
		return 0, fmt.Errorf("read automations version: %w", err)
	}
	return v, nil
}

func scanAutomation(row pgx.Row) (*store.Automation, error) {
	var (
		a                  store.Automation
		input, trig, state string
	)
	if err := row.Scan(&a.ID, &a.Owner, &a.Key, &a.Target, &input, &trig, &a.Enabled, &a.Note, &a.Overlap, &a.Missed, &a.Source, &a.Revision, &a.CreatedAt, &a.UpdatedAt, &state, &a.Approval); err != nil {
		return nil, err
	}
	a.Input = json.RawMessage(input)
	if err := json.Unmarshal([]byte(trig), &a.Trigger); err != nil {
		return nil, fmt.Errorf("decode trigger of automation %s: %w", a.ID, err)
	}
	if err := json.Unmarshal([]byte(state), &a.State); err != nil {
		return nil, fmt.Errorf("decode state of automation %s: %w", a.ID, err)
	}
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	return &a, nil
}

// fireColumns are what scanFire reads.
const fireColumns = "automation_id, nominal, actual, outcome, run_id, manual"

// scanFire reads fireColumns, then extra.
func scanFire(row pgx.Row, extra ...any) (*store.AutomationFire, error) {
	var f store.AutomationFire
	dest := append([]any{&f.AutomationID, &f.Nominal, &f.Actual, &f.Outcome, &f.RunID, &f.Manual}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	f.Nominal, f.Actual = f.Nominal.UTC(), f.Actual.UTC()
	f.Lag = f.Actual.Sub(f.Nominal)
	return &f, nil
}
