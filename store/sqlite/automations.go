package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn/automations/policy"
	"github.com/cairnhq/cairn/store"
)

const automationColumns = "id, owner, key, target, input, trigger, enabled, note, overlap, missed, source, revision, created_at, updated_at, state"

var (
	qInsertAutomation   = prepared("INSERT INTO automations (" + automationColumns + ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING")
	qGetAutomation      = prepared("SELECT " + automationColumns + " FROM automations WHERE id = ?")
	qAutomationByKey    = prepared("SELECT " + automationColumns + " FROM automations WHERE owner = ? AND key = ?")
	qBumpAutomationsVer = prepared("UPDATE automations_version SET version = version + 1 WHERE id = 1")
	qAutomationsVersion = prepared("SELECT version FROM automations_version WHERE id = 1")
	qUpdateAutomation   = prepared("UPDATE automations SET target = ?, input = ?, trigger = ?, enabled = ?, note = ?, overlap = ?, missed = ?, source = ?, revision = ?, updated_at = ?, state = ? WHERE id = ?")
	qAutomationRevision = prepared("SELECT revision FROM automations WHERE id = ?")
	qDeleteFiresOf      = prepared("DELETE FROM automation_fires WHERE automation_id = ?")
	qDeleteAutomation   = prepared("DELETE FROM automations WHERE id = ?")
	qWriteState         = prepared("UPDATE automations SET state = ? WHERE id = ?")
	qListFires          = prepared("SELECT automation_id, nominal, actual, outcome, run_id, manual FROM automation_fires WHERE automation_id = ? ORDER BY nominal DESC LIMIT ?")

	// qListAutomations is indexed by filter: bit 0 owner, bit 1 key.
	qListAutomations = [4]string{
		prepared("SELECT " + automationColumns + " FROM automations ORDER BY owner, key"),
		prepared("SELECT " + automationColumns + " FROM automations WHERE owner = ? ORDER BY owner, key"),
		prepared("SELECT " + automationColumns + " FROM automations WHERE key = ? ORDER BY owner, key"),
		prepared("SELECT " + automationColumns + " FROM automations WHERE owner = ? AND key = ? ORDER BY owner, key"),
	}

	// A batch of fires reads what it decides from with one query per
	// kind, each given a JSON array: the automations (only the columns
	// store.PlanFire reads), their latest runs, and the fires already
	// recorded at the batch's slots ([id, nominal] pairs).
	qFireAutomations = prepared("SELECT id, key, enabled, note, overlap, revision, state FROM automations WHERE id IN (SELECT value FROM json_each(?))")
	qFireLastRuns    = prepared("SELECT id, status, updated_at, finished_at FROM runs WHERE id IN (SELECT value FROM json_each(?))")
	qFireExisting    = prepared("SELECT f.automation_id, f.nominal, f.actual, f.outcome, f.run_id, f.manual FROM json_each(?) AS j JOIN automation_fires AS f ON f.automation_id = j.value ->> 0 AND f.nominal = j.value ->> 1")
	qInsertFire      = prepared("INSERT INTO automation_fires (automation_id, nominal, actual, outcome, run_id, manual) VALUES (?,?,?,?,?,?)")
	qReleaseFire     = prepared("UPDATE automation_fires SET outcome = ?, run_id = ? WHERE automation_id = ? AND nominal = ?")
	// qPruneFires keeps an automation's newest ?2 fires.
	qPruneFires = prepared("DELETE FROM automation_fires WHERE automation_id = ?1 AND nominal < (SELECT nominal FROM automation_fires WHERE automation_id = ?1 ORDER BY nominal DESC LIMIT 1 OFFSET ?2)")
)

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
			a.ID, a.Owner, a.Key, a.Target, string(a.Input), string(trig), a.Enabled, a.Note, a.Overlap, a.Missed, a.Source, a.Revision, a.CreatedAt.UnixMilli(), a.UpdatedAt.UnixMilli(), string(st))
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
	rows, err := s.query(ctx, qListAutomations[which], args...)
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
			next.Target, string(next.Input), string(trig), next.Enabled, next.Note, next.Overlap, next.Missed, next.Source, next.Revision, next.UpdatedAt.UnixMilli(), string(st), next.ID); err != nil {
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

func (s *Store) Fire(ctx context.Context, p store.FireParams) (store.FireResult, error) {
	var res store.FireResult
	err := s.write(ctx, "automation.fire", func(tx *sql.Tx) error {
		out, err := s.fireAll(ctx, tx, []store.FireParams{p})
		if err != nil {
			return err
		}
		// A refused fire fails the operation, so that nothing (not even
		// the operation id) is recorded.
		res = out[0].Result
		return out[0].Err
	})
	if err != nil {
		return store.FireResult{}, err
	}
	return res, nil
}

func (s *Store) FireMany(ctx context.Context, ps []store.FireParams) ([]store.FireOutcome, error) {
	if len(ps) == 0 {
		return []store.FireOutcome{}, nil
	}
	var out []store.FireOutcome
	err := s.write(ctx, "automation.fire_many", func(tx *sql.Tx) error {
		var err error
		out, err = s.fireAll(ctx, tx, ps)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// fireKey names a fire: automation id and nominal unix milliseconds.
type fireKey struct {
	id      string
	nominal int64
}

// fireAll decides and writes the fires ps in order inside tx. A fire that
// store.PlanFire refuses, or whose run id is taken, gets its error in its
// outcome and writes nothing; the error returned is a statement's, and
// then the operation must be rolled back.
//
// It reads the automations (and the latest runs of those with one in
// flight) with one query each. A batch of fires of distinct automations
// is then written with a few statements for the whole batch
// (fireBatch); when that finds a slot fired before or a run id taken, it
// undoes itself and the fires are decided one by one (fireEach).
func (s *Store) fireAll(ctx context.Context, tx *sql.Tx, ps []store.FireParams) ([]store.FireOutcome, error) {
	autos, err := s.fireAutomations(ctx, tx, ps)
	if err != nil {
		return nil, err
	}
	last, err := s.fireLastRuns(ctx, tx, autos)
	if err != nil {
		return nil, err
	}
	if batchable(ps) {
		out, ok, err := s.fireBatch(ctx, tx, ps, autos, last)
		if err != nil || ok {
			return out, err
		}
	}
	return s.fireEach(ctx, tx, ps, autos, last)
}

// batchable reports whether fireBatch may decide ps: two or more fires,
// of distinct automations (so that no fire depends on another), none a
// release.
func batchable(ps []store.FireParams) bool {
	if len(ps) < 2 {
		return false
	}
	seen := make(map[string]bool, len(ps))
	for _, p := range ps {
		if p.Release || seen[p.AutomationID] {
			return false
		}
		seen[p.AutomationID] = true
	}
	return true
}

var (
	qFiresSavepoint  = prepared("SAVEPOINT fires")
	qFiresRollbackTo = prepared("ROLLBACK TO fires")
	qFiresRelease    = prepared("RELEASE fires")
	// The batch's rows are written by multi-row statements, prepared for a
	// few row counts (binding parameters costs less than decoding JSON).
	qInsertFires = preparedRows("INSERT INTO automation_fires (automation_id, nominal, actual, outcome, run_id, manual) VALUES ", 6, " ON CONFLICT DO NOTHING")
	qWriteStates = preparedRows("UPDATE automations SET state = v.column2 FROM (VALUES ", 2, ") AS v WHERE automations.id = v.column1")
	// qPruneFiresOf keeps the newest ?2 fires of each automation in ?1.
	qPruneFiresOf = prepared("DELETE FROM automation_fires WHERE automation_id IN (SELECT value FROM json_each(?1)) AND nominal < " +
		"(SELECT f.nominal FROM automation_fires AS f WHERE f.automation_id = automation_fires.automation_id ORDER BY f.nominal DESC LIMIT 1 OFFSET ?2)")
)

// fireBatch decides the fires ps of distinct automations and writes them
// with one statement for all fire rows, one for all states and one for
// the history pruning, plus the queued runs. ok is false when a fire's
// slot was recorded before (a manual fire at the same instant) or its run
// id is taken: then nothing was kept, and fireEach must decide.
func (s *Store) fireBatch(ctx context.Context, tx *sql.Tx, ps []store.FireParams, autos map[string]*store.Automation, last map[string]*store.Run) (out []store.FireOutcome, ok bool, err error) {
	out = make([]store.FireOutcome, len(ps))
	plans := make([]policy.FirePlan, len(ps))
	var writes []int // the fires to record, by index in ps
	for i, p := range ps {
		a, found := autos[p.AutomationID]
		if !found {
			out[i].Err = &store.NotFoundError{Kind: "automation", ID: p.AutomationID}
			continue
		}
		// No fire is recorded at the slot (the insert below checks it),
		// so PlanFire either refuses p, finds it already fired (the
		// cursor is past it), or records it.
		plan, err := policy.PlanFire(a, last[a.State.LastRunID], nil, p)
		if err != nil {
			out[i].Err = err
			continue
		}
		if !plan.Insert {
			out[i].Result = copyResult(plan.Result)
			continue
		}
		plans[i] = plan
		writes = append(writes, i)
	}
	if len(writes) == 0 {
		return out, true, nil
	}
	fires := make([]any, 0, 6*len(writes))
	for _, i := range writes {
		f := plans[i].Result.Fire
		fires = append(fires, f.AutomationID, f.Nominal.UnixMilli(), f.Actual.UnixMilli(), f.Outcome, f.RunID, f.Manual)
	}
	if _, err := s.exec(ctx, tx, qFiresSavepoint); err != nil {
		return nil, false, fmt.Errorf("fire batch: savepoint: %w", err)
	}
	kept := false
	defer func() {
		if kept {
			_, rerr := s.exec(ctx, tx, qFiresRelease)
			if rerr != nil && err == nil {
				out, ok, err = nil, false, fmt.Errorf("fire batch: release savepoint: %w", rerr)
			}
			return
		}
		_, rerr := s.exec(ctx, tx, qFiresRollbackTo)
		if rerr == nil {
			_, rerr = s.exec(ctx, tx, qFiresRelease)
		}
		if rerr != nil && err == nil {
			out, ok, err = nil, false, fmt.Errorf("fire batch: roll back: %w", rerr)
		}
	}()
	inserted, err := s.execRows(ctx, tx, qInsertFires, fires)
	if err != nil {
		return nil, false, fmt.Errorf("record fires: %w", err)
	}
	if inserted != int64(len(writes)) {
		return nil, false, nil // a slot was fired before
	}
	var prune []string
	states := make([]any, 0, 2*len(writes))
	for _, i := range writes {
		plan, id := plans[i], ps[i].AutomationID
		if plan.QueueRun {
			if err := s.insertRun(ctx, tx, plan.Result.Run); errors.Is(err, store.ErrExists) {
				return nil, false, nil
			} else if err != nil {
				return nil, false, err
			}
		}
		if mustPrune(id, plan.State) {
			prune = append(prune, id)
		}
		b, err := json.Marshal(plan.State)
		if err != nil {
			return nil, false, fmt.Errorf("encode state of automation %s: %w", id, err)
		}
		text := string(b)
		decodedStates.put(text, plan.State)
		states = append(states, id, text)
	}
	if len(prune) > 0 {
		arg, err := jsonArg(prune)
		if err != nil {
			return nil, false, err
		}
		if _, err := s.exec(ctx, tx, qPruneFiresOf, arg, store.FireHistory-1); err != nil {
			return nil, false, fmt.Errorf("prune fires: %w", err)
		}
	}
	if _, err := s.execRows(ctx, tx, qWriteStates, states); err != nil {
		return nil, false, fmt.Errorf("record states of automations: %w", err)
	}
	for _, i := range writes {
		out[i].Result = copyResult(plans[i].Result)
	}
	kept = true
	return out, true, nil
}

// rowsStmt is a statement over a list of rows, "<head>(?,?),(?,?)<tail>",
// prepared for each of rowsChunks rows.
type rowsStmt struct {
	width int
	q     map[int]string // by row count
}

// rowsChunks are the row counts a rowsStmt is prepared for, largest
// first; the last must be 1.
var rowsChunks = []int{64, 8, 1}

// preparedRows declares a rowsStmt whose rows have width values.
func preparedRows(head string, width int, tail string) rowsStmt {
	row := "(?" + strings.Repeat(",?", width-1) + ")"
	st := rowsStmt{width: width, q: make(map[int]string, len(rowsChunks))}
	for _, n := range rowsChunks {
		st.q[n] = prepared(head + row + strings.Repeat(","+row, n-1) + tail)
	}
	return st
}

// execRows runs st over args (width values per row, in order), as few
// statements as the chunk sizes allow, and returns the rows affected.
func (s *Store) execRows(ctx context.Context, tx *sql.Tx, st rowsStmt, args []any) (int64, error) {
	var total int64
	for len(args) > 0 {
		rows := len(args) / st.width
		n := rowsChunks[len(rowsChunks)-1]
		for _, c := range rowsChunks {
			if c <= rows {
				n = c
				break
			}
		}
		res, err := s.exec(ctx, tx, st.q[n], args[:n*st.width]...)
		if err != nil {
			return total, err
		}
		k, err := res.RowsAffected()
		if err != nil {
			return total, err
		}
		total += k
		args = args[n*st.width:]
	}
	return total, nil
}

// fireEach decides and writes the fires ps one after the other, each
// seeing the ones before it.
func (s *Store) fireEach(ctx context.Context, tx *sql.Tx, ps []store.FireParams, autos map[string]*store.Automation, last map[string]*store.Run) ([]store.FireOutcome, error) {
	existing, err := s.fireExisting(ctx, tx, ps)
	if err != nil {
		return nil, err
	}
	out := make([]store.FireOutcome, len(ps))
	var changed []*store.Automation
	isChanged := map[string]bool{}
	for i, p := range ps {
		a, ok := autos[p.AutomationID]
		if !ok {
			out[i].Err = &store.NotFoundError{Kind: "automation", ID: p.AutomationID}
			continue
		}
		key := fireKey{a.ID, p.Nominal.UTC().Truncate(time.Millisecond).UnixMilli()}
		plan, err := policy.PlanFire(a, last[a.State.LastRunID], existing[key], p)
		if err != nil {
			out[i].Err = err
			continue
		}
		if !plan.Insert && !plan.Update {
			out[i].Result = copyResult(plan.Result)
			continue
		}
		if plan.QueueRun {
			if err := s.insertRun(ctx, tx, plan.Result.Run); errors.Is(err, store.ErrExists) {
				out[i].Err = err // nothing written for this fire
				continue
			} else if err != nil {
				return nil, err
			}
			r := plan.Result.Run
			last[r.ID] = &store.Run{ID: r.ID, Status: r.Status, UpdatedAt: r.UpdatedAt}
		}
		f := plan.Result.Fire
		if plan.Insert {
			if _, err := s.exec(ctx, tx, qInsertFire, f.AutomationID, f.Nominal.UnixMilli(), f.Actual.UnixMilli(), f.Outcome, f.RunID, f.Manual); err != nil {
				return nil, fmt.Errorf("record fire of automation %s: %w", a.ID, err)
			}
			if mustPrune(a.ID, plan.State) {
				if _, err := s.exec(ctx, tx, qPruneFires, a.ID, store.FireHistory-1); err != nil {
					return nil, fmt.Errorf("prune fires of automation %s: %w", a.ID, err)
				}
			}
		} else {
			if _, err := s.exec(ctx, tx, qReleaseFire, f.Outcome, f.RunID, f.AutomationID, f.Nominal.UnixMilli()); err != nil {
				return nil, fmt.Errorf("record fire of automation %s: %w", a.ID, err)
			}
		}
		c := *f
		existing[key] = &c
		a.State = plan.State
		if !isChanged[a.ID] {
			isChanged[a.ID] = true
			changed = append(changed, a)
		}
		out[i].Result = copyResult(plan.Result)
	}
	for _, a := range changed {
		if err := s.writeState(ctx, tx, a.ID, a.State); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// mustPrune reports whether recording a fire that leaves st should prune
// the automation's history: every FireHistory fires, keeping the newest
// FireHistory, so at most twice that many rows stay and ListFires returns
// the newest FireHistory. Automations are pruned at different counts, so
// that the many due at one instant are not all pruned by the same batch.
func mustPrune(id string, st store.AutomationState) bool {
	return (st.Fires+st.Skipped+pruneOffset(id))%store.FireHistory == 0
}

// pruneOffset spreads automations over the FireHistory counts at which
// their history is pruned.
func pruneOffset(id string) int64 {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int64(h.Sum32() % store.FireHistory)
}

// copyResult gives the caller its own fire record.
func copyResult(r store.FireResult) store.FireResult {
	if r.Fire != nil {
		c := *r.Fire
		r.Fire = &c
	}
	return r
}

// jsonArg encodes v as a JSON text parameter (for json_each).
func jsonArg(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode fire batch: %w", err)
	}
	return string(b), nil
}

// fireAutomations reads the automations ps name, by id, with the columns
// store.PlanFire reads.
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
		if a.State, err = decodedStates.decode(state); err != nil {
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
		r.UpdatedAt, r.FinishedAt = time.UnixMilli(updated).UTC(), timeOf(finished)
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

func (s *Store) writeState(ctx context.Context, tx *sql.Tx, id string, st store.AutomationState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	text := string(b)
	decodedStates.put(text, st)
	if _, err := s.exec(ctx, tx, qWriteState, text, id); err != nil {
		return fmt.Errorf("record state of automation %s: %w", id, err)
	}
	return nil
}

func (s *Store) RecordAutomation(ctx context.Context, p store.RecordParams) (*store.Automation, error) {
	var out *store.Automation
	err := s.write(ctx, "automation.record", func(tx *sql.Tx) error {
		a, err := s.txGetAutomation(ctx, tx, p.AutomationID)
		if err != nil {
			return err
		}
		st, err := policy.ApplyRecord(a, p)
		if err != nil {
			return err
		}
		a.State = st
		out = a
		return s.writeState(ctx, tx, a.ID, st)
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
	rows, err := s.query(ctx, qListFires, automationID, limit)
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

// decodedStates remembers automation states by their JSON text. A batch
// of fires reads back the states this process wrote last (the previous
// batch, or the pass that recorded the next due time), and decoding a
// thousand of them is a good share of the batch. It maps a text to its
// decoding, whoever wrote the text and whether or not the write that
// produced it committed, so it can never give a state other than the one
// the database holds; a text it does not know is decoded.
var decodedStates = stateMemo{m: map[string]store.AutomationState{}}

// stateMemoMax bounds the memo; past it, it starts over.
const stateMemoMax = 1 << 14

type stateMemo struct {
	mu sync.Mutex
	m  map[string]store.AutomationState
}

// decode returns the state text encodes.
func (m *stateMemo) decode(text string) (store.AutomationState, error) {
	m.mu.Lock()
	st, ok := m.m[text]
	m.mu.Unlock()
	if ok {
		st.Pending = st.Pending.Clone()
		return st, nil
	}
	if err := json.Unmarshal([]byte(text), &st); err != nil {
		return store.AutomationState{}, err
	}
	m.put(text, st)
	return st, nil
}

// put remembers that text encodes st.
func (m *stateMemo) put(text string, st store.AutomationState) {
	st.Pending = st.Pending.Clone()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.m) >= stateMemoMax {
		clear(m.m)
	}
	m.m[text] = st
}
