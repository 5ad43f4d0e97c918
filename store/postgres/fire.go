package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/automations/policy"
	"github.com/cairnhq/cairn/store"
)

// A fire's transaction locks the lease it is fenced by (FOR SHARE, so the
// lease cannot change hands before it commits), then the rows of the
// automations it fires (FOR UPDATE, in id order, so that batches racing
// from several hosts never deadlock): a slot is then decided by one
// transaction at a time, from the fires its predecessors committed. The
// primary key (automation_id, nominal) of automation_fires is the last
// word: a second row for a slot cannot exist.

func (s *Store) Fire(ctx context.Context, p store.FireParams) (store.FireResult, error) {
	var res store.FireResult
	err := s.write(ctx, "automation.fire", func(tx pgx.Tx) error {
		if err := checkFencesTx(ctx, tx, p.Lease); err != nil {
			return err
		}
		out, err := fireAll(ctx, tx, []store.FireParams{p})
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
	err := s.write(ctx, "automation.fire_many", func(tx pgx.Tx) error {
		fences := make([]*store.LeaseFence, len(ps))
		for i, p := range ps {
			fences[i] = p.Lease
		}
		if err := checkFencesTx(ctx, tx, fences...); err != nil {
			return err
		}
		var err error
		out, err = fireAll(ctx, tx, ps)
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

func keyOf(p store.FireParams) fireKey {
	return fireKey{p.AutomationID, store.Millis(p.Nominal).UnixMilli()}
}

// fireWrites are the rows a batch of fires writes, gathered so that they
// go to the server as a few statements for the whole batch.
type fireWrites struct {
	inserts  []*store.AutomationFire
	releases []*store.AutomationFire
	states   map[string]store.AutomationState
	order    []string // automations whose state changed, first change first
	pruned   []string // automations whose history grew
}

// fireAll decides the fires ps in order inside tx, each seeing the ones
// before it, and writes them. A fire that policy.PlanFire refuses, or
// whose run id is taken, gets its error in its outcome and writes
// nothing; the error returned is a statement's, and then the operation
// must be rolled back.
func fireAll(ctx context.Context, tx pgx.Tx, ps []store.FireParams) ([]store.FireOutcome, error) {
	autos, err := lockFireAutomations(ctx, tx, ps)
	if err != nil {
		return nil, err
	}
	last, err := fireLastRuns(ctx, tx, autos)
	if err != nil {
		return nil, err
	}
	existing, err := fireExisting(ctx, tx, ps)
	if err != nil {
		return nil, err
	}
	out := make([]store.FireOutcome, len(ps))
	w := &fireWrites{states: map[string]store.AutomationState{}}
	for i, p := range ps {
		a, ok := autos[p.AutomationID]
		if !ok {
			out[i].Err = &store.NotFoundError{Kind: "automation", ID: p.AutomationID}
			continue
		}
		key := keyOf(p)
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
			r := plan.Result.Run
			if err := insertRunTx(ctx, tx, r); errors.Is(err, store.ErrExists) {
				out[i].Err = err // nothing written for this fire
				continue
			} else if err != nil {
				return nil, err
			}
			last[r.ID] = &store.Run{ID: r.ID, Status: r.Status, UpdatedAt: r.UpdatedAt}
		}
		f := *plan.Result.Fire
		if plan.Insert {
			w.inserts = append(w.inserts, &f)
			w.pruned = append(w.pruned, a.ID)
		} else {
			w.releases = append(w.releases, &f)
		}
		existing[key] = &f
		a.State = plan.State
		if _, seen := w.states[a.ID]; !seen {
			w.order = append(w.order, a.ID)
		}
		w.states[a.ID] = plan.State
		out[i].Result = copyResult(plan.Result)
	}
	if err := w.write(ctx, tx); err != nil {
		return nil, err
	}
	return out, nil
}

// write sends the batch's rows: every new fire in one statement, each
// release, every state in one statement, and the pruning of the grown
// histories to the newest store.FireHistory fires in one more.
func (w *fireWrites) write(ctx context.Context, tx pgx.Tx) error {
	if len(w.order) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	if n := len(w.inserts); n > 0 {
		var (
			ids, outcomes, runs []string
			nominals, actuals   []time.Time
			manual              []bool
		)
		for _, f := range w.inserts {
			ids, outcomes, runs = append(ids, f.AutomationID), append(outcomes, f.Outcome), append(runs, f.RunID)
			nominals, actuals, manual = append(nominals, f.Nominal), append(actuals, f.Actual), append(manual, f.Manual)
		}
		b.Queue("INSERT INTO automation_fires ("+fireColumns+") SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[], $4::text[], $5::text[], $6::boolean[])",
			ids, nominals, actuals, outcomes, runs, manual)
	}
	for _, f := range w.releases {
		b.Queue("UPDATE automation_fires SET outcome = $3, run_id = $4, actual = $5 WHERE automation_id = $1 AND nominal = $2",
			f.AutomationID, f.Nominal, f.Outcome, f.RunID, f.Actual)
	}
	states := make([]string, len(w.order))
	for i, id := range w.order {
		st, err := encodeState(id, w.states[id])
		if err != nil {
			return err
		}
		states[i] = st
	}
	b.Queue("UPDATE automations AS a SET state = v.state FROM unnest($1::text[], $2::text[]) AS v (id, state) WHERE a.id = v.id", w.order, states)
	if len(w.pruned) > 0 {
		b.Queue("DELETE FROM automation_fires AS f USING (SELECT automation_id, nominal, row_number() OVER (PARTITION BY automation_id ORDER BY nominal DESC) AS k "+
			"FROM automation_fires WHERE automation_id = ANY($1)) AS old WHERE old.k > $2 AND f.automation_id = old.automation_id AND f.nominal = old.nominal",
			w.pruned, store.FireHistory)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("record fires: %w", err)
	}
	return nil
}

// copyResult gives the caller its own fire record.
func copyResult(r store.FireResult) store.FireResult {
	if r.Fire != nil {
		c := *r.Fire
		r.Fire = &c
	}
	return r
}
