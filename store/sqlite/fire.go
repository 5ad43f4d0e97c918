package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/cairnhq/cairn/automations/policy"
	"github.com/cairnhq/cairn/store"
)

var (
	// A batch of fires reads what it decides from with one query per
	// kind, each given a JSON array: the automations (only the columns
	// policy.PlanFire reads), their latest runs, and the fires already
	// recorded at the batch's slots ([id, nominal] pairs).
	qFireAutomations = prepared("SELECT id, key, enabled, note, overlap, revision, state FROM automations WHERE id IN (SELECT value FROM json_each(?))")
	qFireLastRuns    = prepared("SELECT id, status, updated_at, finished_at FROM runs WHERE id IN (SELECT value FROM json_each(?))")
	qFireExisting    = prepared("SELECT f.automation_id, f.nominal, f.actual, f.outcome, f.run_id, f.manual FROM json_each(?) AS j JOIN automation_fires AS f ON f.automation_id = j.value ->> 0 AND f.nominal = j.value ->> 1")
	qInsertFire      = prepared("INSERT INTO automation_fires (automation_id, nominal, actual, outcome, run_id, manual) VALUES (?,?,?,?,?,?)")
	qReleaseFire     = prepared("UPDATE automation_fires SET outcome = ?, run_id = ?, actual = ? WHERE automation_id = ? AND nominal = ?")
	// qPruneFires keeps an automation's newest ?2 fires.
	qPruneFires = prepared("DELETE FROM automation_fires WHERE automation_id = ?1 AND nominal < (SELECT nominal FROM automation_fires WHERE automation_id = ?1 ORDER BY nominal DESC LIMIT 1 OFFSET ?2)")
)

func (s *Store) Fire(ctx context.Context, p store.FireParams) (store.FireResult, error) {
	var res store.FireResult
	err := s.write(ctx, "automation.fire", func(tx *sql.Tx) error {
		if err := s.checkFences(ctx, tx, p.Lease); err != nil {
			return err
		}
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
		fences := make([]*store.LeaseFence, len(ps))
		for i, p := range ps {
			fences[i] = p.Lease
		}
		if err := s.checkFences(ctx, tx, fences...); err != nil {
			return err
		}
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
// policy.PlanFire refuses, or whose run id is taken, gets its error in its
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
		s.states.put(text, plan.State)
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
			if _, err := s.exec(ctx, tx, qReleaseFire, f.Outcome, f.RunID, f.Actual.UnixMilli(), f.AutomationID, f.Nominal.UnixMilli()); err != nil {
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

// writeState records an automation's state (and remembers its text).
func (s *Store) writeState(ctx context.Context, tx *sql.Tx, id string, st store.AutomationState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	text := string(b)
	s.states.put(text, st)
	if _, err := s.exec(ctx, tx, qWriteState, text, id); err != nil {
		return fmt.Errorf("record state of automation %s: %w", id, err)
	}
	return nil
}
