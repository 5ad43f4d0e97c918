package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn/automations/policy"
	"github.com/cairnhq/cairn/store"
)

const automationColumns = "id, owner, key, target, input, trigger, enabled, note, overlap, missed, source, revision, created_at, updated_at, state, approval"

var (
	qInsertAutomation   = prepared("INSERT INTO automations (" + automationColumns + ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING")
	qGetAutomation      = prepared("SELECT " + automationColumns + " FROM automations WHERE id = ?")
	qAutomationByKey    = prepared("SELECT " + automationColumns + " FROM automations WHERE owner = ? AND key = ?")
	qBumpAutomationsVer = prepared("UPDATE automations_version SET version = version + 1 WHERE id = 1")
	qAutomationsVersion = prepared("SELECT version FROM automations_version WHERE id = 1")
	qUpdateAutomation   = prepared("UPDATE automations SET target = ?, input = ?, trigger = ?, enabled = ?, note = ?, overlap = ?, missed = ?, source = ?, revision = ?, updated_at = ?, state = ?, approval = ? WHERE id = ?")
	qAutomationRevision = prepared("SELECT revision FROM automations WHERE id = ?")
	qDeleteFiresOf      = prepared("DELETE FROM automation_fires WHERE automation_id = ?")
	qDeleteAutomation   = prepared("DELETE FROM automations WHERE id = ?")
	qWriteState         = prepared("UPDATE automations SET state = ? WHERE id = ?")
	qPauseAutomation    = prepared("UPDATE automations SET enabled = ?, note = ?, revision = ?, updated_at = ?, state = ? WHERE id = ?")
	qListFires          = prepared("SELECT f.automation_id, f.nominal, f.actual, f.outcome, f.run_id, f.manual, COALESCE(r.status, '') FROM automation_fires AS f LEFT JOIN runs AS r ON f.run_id <> '' AND r.id = f.run_id WHERE f.automation_id = ? ORDER BY f.nominal DESC LIMIT ?")

	// qListAutomations is indexed by filter: bit 0 owner, bit 1 key, bit
	// 2 after (a keyset cursor on the (owner, key) unique index).
	qListAutomations = listAutomationQueries()
)

func listAutomationQueries() [8]string {
	var out [8]string
	for which := range out {
		var conds []string
		if which&1 != 0 {
			conds = append(conds, "owner = ?")
		}
		if which&2 != 0 {
			conds = append(conds, "key = ?")
		}
		if which&4 != 0 {
			conds = append(conds, "(owner, key) > (?, ?)")
		}
		where := ""
		if len(conds) > 0 {
			where = " WHERE " + strings.Join(conds, " AND ")
		}
		out[which] = prepared("SELECT " + automationColumns + " FROM automations" + where + " ORDER BY owner, key LIMIT ?")
	}
	return out
}

func (s *Store) CreateAutomation(ctx context.Context, a *store.Automation) error {
	policy.PrepareNew(a)
	trig, err := json.Marshal(a.Trigger)
	if err != nil {
		return err
	}
	st, err := json.Marshal(a.State)
	if err != nil {
		return err
	}
	return s.write(ctx, "automation.create", func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, qInsertAutomation,
			a.ID, a.Owner, a.Key, a.Target, string(a.Input), string(trig), a.Enabled, a.Note, a.Overlap, a.Missed, a.Source, a.Revision, a.CreatedAt.UnixMilli(), a.UpdatedAt.UnixMilli(), string(st), a.Approval)
		if err != nil {
			return fmt.Errorf("insert automation %s: %w", a.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			existing, err := scanAutomation(s.txQueryRow(ctx, tx, qAutomationByKey, a.Owner, a.Key))
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("create automation %s: %w", a.ID, store.ErrExists)
			}
			if err != nil {
				return err
			}
			return &store.AutomationExistsError{Existing: existing}
		}
		return s.bumpAutomationsVersion(ctx, tx)
	})
}

func (s *Store) bumpAutomationsVersion(ctx context.Context, tx *sql.Tx) error {
	if _, err := s.exec(ctx, tx, qBumpAutomationsVer); err != nil {
		return fmt.Errorf("bump automations version: %w", err)
	}
	return nil
}

func (s *Store) GetAutomation(ctx context.Context, id string) (*store.Automation, error) {
	return automationOrNotFound(s.queryRow(ctx, qGetAutomation, id), id)
}

// txGetAutomation reads one automation inside tx.
func (s *Store) txGetAutomation(ctx context.Context, tx *sql.Tx, id string) (*store.Automation, error) {
	return automationOrNotFound(s.txQueryRow(ctx, tx, qGetAutomation, id), id)
}

func automationOrNotFound(row *sql.Row, id string) (*store.Automation, error) {
	a, err := scanAutomation(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "automation", ID: id}
	}
	return a, err
}

func (s *Store) ListAutomations(ctx context.Context, f store.AutomationFilter) ([]*store.Automation, error) {
	var (
		which int
		args  []any
	)
	if f.Owner != "" {
		which, args = which|1, append(args, f.Owner)
	}
	if f.Key != "" {
		which, args = which|2, append(args, f.Key)
	}
	if f.After != nil {
		which, args = which|4, append(args, f.After.Owner, f.After.Key)
	}
	limit := -1 // SQLite: no limit
	if f.Limit > 0 {
		limit = f.Limit
	}
	rows, err := s.query(ctx, qListAutomations[which], append(args, limit)...)
	out, err := scanRows(rows, err, scanAutomation, []*store.Automation{})
	if err != nil {
		return nil, fmt.Errorf("list automations: %w", err)
	}
	return out, nil
}

func (s *Store) UpdateAutomation(ctx context.Context, a *store.Automation, expected int64) error {
	var out *store.Automation
	err := s.write(ctx, "automation.update", func(tx *sql.Tx) error {
		cur, err := s.txGetAutomation(ctx, tx, a.ID)
		if err != nil {
			return err
		}
		if cur.Revision != expected {
			return &store.StaleError{Kind: "automation", ID: a.ID, Expected: expected, Actual: cur.Revision}
		}
		next := policy.ApplyUpdate(cur, a, a.UpdatedAt)
		trig, err := json.Marshal(next.Trigger)
		if err != nil {
			return err
		}
		st, err := json.Marshal(next.State)
		if err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, qUpdateAutomation,
			next.Target, string(next.Input), string(trig), next.Enabled, next.Note, next.Overlap, next.Missed, next.Source, next.Revision, next.UpdatedAt.UnixMilli(), string(st), next.Approval, next.ID); err != nil {
			return fmt.Errorf("update automation %s: %w", a.ID, err)
		}
		out = next
		return s.bumpAutomationsVersion(ctx, tx)
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
		err := s.txQueryRow(ctx, tx, qAutomationRevision, id).Scan(&rev)
		if errors.Is(err, sql.ErrNoRows) {
			return &store.NotFoundError{Kind: "automation", ID: id}
		}
		if err != nil {
			return fmt.Errorf("delete automation %s: %w", id, err)
		}
		if expected != 0 && rev != expected {
			return &store.StaleError{Kind: "automation", ID: id, Expected: expected, Actual: rev}
		}
		if _, err := s.exec(ctx, tx, qDeleteFiresOf, id); err != nil {
			return fmt.Errorf("delete automation %s: %w", id, err)
		}
		if _, err := s.exec(ctx, tx, qDeleteAutomation, id); err != nil {
			return fmt.Errorf("delete automation %s: %w", id, err)
		}
		return s.bumpAutomationsVersion(ctx, tx)
	})
}

func (s *Store) RecordAutomation(ctx context.Context, p store.RecordParams) (*store.Automation, error) {
	var out *store.Automation
	err := s.write(ctx, "automation.record", func(tx *sql.Tx) error {
		if err := s.checkFences(ctx, tx, p.Lease); err != nil {
			return err
		}
		a, err := s.txGetAutomation(ctx, tx, p.AutomationID)
		if err != nil {
			return err
		}
		next, paused, err := policy.PlanRecord(a, p)
		if err != nil {
			return err
		}
		out = next
		if !paused {
			return s.writeState(ctx, tx, a.ID, next.State)
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
func (s *Store) writePause(ctx context.Context, tx *sql.Tx, next *store.Automation, p *store.PauseParams) error {
	st, err := json.Marshal(next.State)
	if err != nil {
		return err
	}
	if _, err := s.exec(ctx, tx, qPauseAutomation, next.Enabled, next.Note, next.Revision, next.UpdatedAt.UnixMilli(), string(st), next.ID); err != nil {
		return fmt.Errorf("pause automation %s: %w", next.ID, err)
	}
	if err := s.enqueueAllTx(ctx, tx, p.Notify, p.At); err != nil {
		return err
	}
	return s.bumpAutomationsVersion(ctx, tx)
}

func (s *Store) ListFires(ctx context.Context, automationID string, limit int) ([]*store.AutomationFire, error) {
	if limit <= 0 || limit > store.FireHistory {
		limit = store.FireHistory
	}
	rows, err := s.query(ctx, qListFires, automationID, limit)
	out, err := scanRows(rows, err, scanListedFire, []*store.AutomationFire{})
	if err != nil {
		return nil, fmt.Errorf("list fires of automation %s: %w", automationID, err)
	}
	return out, nil
}

func (s *Store) AutomationsVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.queryRow(ctx, qAutomationsVersion).Scan(&v); err != nil {
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
	if err := row.Scan(&a.ID, &a.Owner, &a.Key, &a.Target, &input, &trig, &a.Enabled, &a.Note, &a.Overlap, &a.Missed, &a.Source, &a.Revision, &created, &updated, &state, &a.Approval); err != nil {
		return nil, err
	}
	a.Input = json.RawMessage(input)
	if err := json.Unmarshal([]byte(trig), &a.Trigger); err != nil {
		return nil, fmt.Errorf("decode trigger of automation %s: %w", a.ID, err)
	}
	if err := json.Unmarshal([]byte(state), &a.State); err != nil {
		return nil, fmt.Errorf("decode state of automation %s: %w", a.ID, err)
	}
	a.CreatedAt = millisTime(created)
	a.UpdatedAt = millisTime(updated)
	return &a, nil
}

// scanListedFire reads a fire with its run's status.
func scanListedFire(row rowScanner) (*store.AutomationFire, error) {
	var (
		f               store.AutomationFire
		nominal, actual int64
	)
	if err := row.Scan(&f.AutomationID, &nominal, &actual, &f.Outcome, &f.RunID, &f.Manual, &f.RunStatus); err != nil {
		return nil, err
	}
	f.Nominal = millisTime(nominal)
	f.Actual = millisTime(actual)
	f.Lag = f.Actual.Sub(f.Nominal)
	return &f, nil
}

func scanFire(row rowScanner) (*store.AutomationFire, error) {
	var (
		f               store.AutomationFire
		nominal, actual int64
	)
	if err := row.Scan(&f.AutomationID, &nominal, &actual, &f.Outcome, &f.RunID, &f.Manual); err != nil {
		return nil, err
	}
	f.Nominal = millisTime(nominal)
	f.Actual = millisTime(actual)
	f.Lag = f.Actual.Sub(f.Nominal)
	return &f, nil
}
