package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn/store"
)

type runsData struct {
	byID   map[string]*store.Run
	ledger map[string][]*store.LedgerEntry // by run id, in seq order
	seq    map[string]int64                // by run id: the number of its latest change
	last   int64                           // the latest change number
}

// changed gives run id the next change number. The caller holds the
// store's lock.
func (d *runsData) changed(id string) {
	d.last++
	d.seq[id] = d.last
}

func (d *runsData) init() {
	d.byID = make(map[string]*store.Run)
	d.ledger = make(map[string][]*store.LedgerEntry)
	d.seq = make(map[string]int64)
}

func (d *runsData) count() int { return len(d.byID) }

// insert adds a copy of r, filling defaults as the SQLite store does.
// The caller holds the store's lock.
func (d *runsData) insert(r *store.Run) error {
	if _, ok := d.byID[r.ID]; ok {
		return fmt.Errorf("create run %s: %w", r.ID, store.ErrExists)
	}
	r.SetCreateDefaults(time.Now())
	d.byID[r.ID] = cloneRun(r)
	d.changed(r.ID)
	return nil
}

func (s *Store) CreateRun(ctx context.Context, r *store.Run) error {
	return s.write(ctx, "run.create", func() error { return s.runs.insert(r) })
}

func (s *Store) GetRun(ctx context.Context, id string) (*store.Run, error) {
	var out *store.Run
	err := s.read(func() error {
		r, ok := s.runs.byID[id]
		if !ok {
			return &store.NotFoundError{Kind: "run", ID: id}
		}
		out = cloneRun(r)
		return nil
	})
	return out, err
}

// cloneRun copies a run so callers never share memory with the store.
func cloneRun(r *store.Run) *store.Run {
	c := *r
	c.Input = cloneRaw(r.Input)
	c.Literals = cloneRaw(r.Literals)
	c.Journal = cloneRaw(r.Journal)
	c.Result = cloneRaw(r.Result)
	if r.Question != nil {
		q := *r.Question
		q.Choices = append([]string(nil), r.Question.Choices...)
		c.Question = &q
	}
	return &c
}

func cloneRaw(m json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return nil
	}
	return append(json.RawMessage(nil), m...)
}

func cloneEntry(e *store.LedgerEntry) *store.LedgerEntry {
	c := *e
	c.Detail = cloneRaw(e.Detail)
	c.Result = cloneRaw(e.Result)
	if e.Answer != nil {
		a := *e.Answer
		c.Answer = &a
	}
	return &c
}

func newestFirst(a, b *store.Run) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(b.ID, a.ID)
}

func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]*store.Run, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, store.MaxListLimit)
	var (
		curMS int64
		curID string
	)
	if f.Cursor != "" {
		ms, id, ok := strings.Cut(f.Cursor, ".")
		n, err := strconv.ParseInt(ms, 10, 64)
		if !ok || err != nil || id == "" {
			return nil, "", fmt.Errorf("list runs: invalid cursor %q", f.Cursor)
		}
		curMS, curID = n, id
	}
	var out []*store.Run
	err := s.read(func() error {
		for _, r := range s.runs.byID {
			switch {
			case len(f.Status) > 0 && !slices.Contains(f.Status, r.Status):
				continue
			case f.Target != "" && r.Target != f.Target:
				continue
			case !f.UpdatedAfter.IsZero() && r.UpdatedAt.UnixMilli() <= f.UpdatedAfter.UnixMilli():
				continue
			case f.Cursor != "" && !(r.CreatedAt.UnixMilli() < curMS || r.CreatedAt.UnixMilli() == curMS && r.ID < curID):
				continue
			}
			c := cloneRun(r)
			c.Journal = nil // GetRun only
			out = append(out, c)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	slices.SortFunc(out, newestFirst)
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = strconv.FormatInt(last.CreatedAt.UnixMilli(), 10) + "." + last.ID
	}
	return out, next, nil
}

func (s *Store) RunnableRuns(ctx context.Context, now time.Time, limit int) ([]*store.Run, error) {
	if limit <= 0 {
		limit = 50
	}
	var out []*store.Run
	err := s.read(func() error {
		for _, r := range s.runs.byID {
			if r.Runnable(now) {
				c := cloneRun(r)
				c.Literals, c.Journal = nil, nil
				out = append(out, c)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b *store.Run) int {
		if ar, br := a.Status == store.RunRunning, b.Status == store.RunRunning; ar != br {
			if ar {
				return 1
			}
			return -1
		}
		return newestFirst(b, a)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (s *Store) CountPending(ctx context.Context) (int, error) {
	n := 0
	err := s.read(func() error {
		for _, r := range s.runs.byID {
			if r.Status == store.RunQueued || r.Status == store.RunRunning || r.Status == store.RunWaiting && !r.WakeAt.IsZero() {
				n++
			}
		}
		return nil
	})
	return n, err
}

// runWrite finds run id, lets check validate and prepare a change on a
// copy, then stores the copy with the next revision. check must not touch
// the store's data: only the copy it is given.
func (s *Store) runWrite(ctx context.Context, kind, id string, check func(r *store.Run) (commit func(), err error)) (*store.Run, error) {
	var out *store.Run
	err := s.write(ctx, kind, func() error {
		cur, ok := s.runs.byID[id]
		if !ok {
			return &store.NotFoundError{Kind: "run", ID: id}
		}
		r := cloneRun(cur)
		commit, err := check(r)
		if err != nil {
			return err
		}
		r.Revision++
		r.UpdatedAt = time.Now().UTC().Truncate(time.Millisecond)
		if commit != nil {
			commit()
		}
		s.runs.byID[id] = r
		s.runs.changed(id)
		out = cloneRun(r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func owned(r *store.Run, claim string) error {
	if claim == "" || r.Claim != claim {
		return store.NotOwnerError(r.ID)
	}
	return nil
}

func (s *Store) ClaimRun(ctx context.Context, p store.ClaimParams) (*store.Claimed, error) {
	var prev store.Claimed
	r, err := s.runWrite(ctx, "run.claim", p.ID, func(r *store.Run) (func(), error) {
		if p.Claim == "" {
			return nil, fmt.Errorf("claim run %s: empty claim token", p.ID)
		}
		if !r.Runnable(p.Now) {
			return nil, &store.RunStateError{ID: r.ID, Status: r.Status, Op: "claim"}
		}
		prev = store.Claimed{PrevStatus: r.Status, PrevOwnerPID: r.OwnerPID}
		r.Status = store.RunRunning
		r.OwnerPID, r.Claim = p.PID, p.Claim
		r.Question, r.WakeAt = nil, time.Time{}
		if r.StartedAt.IsZero() {
			r.StartedAt = time.Now().UTC().Truncate(time.Millisecond)
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	prev.Run = r
	return &prev, nil
}

// ownerResult is a run an owner's write returns: without its literals,
// as the SQLite store returns it.
func ownerResult(r *store.Run, err error) (*store.Run, error) {
	if r != nil {
		r.Literals = nil
	}
	return r, err
}

func (s *Store) ParkRun(ctx context.Context, p store.ParkParams) (*store.Run, error) {
	return ownerResult(s.runWrite(ctx, "run.park", p.ID, func(r *store.Run) (func(), error) {
		if err := owned(r, p.Claim); err != nil {
			return nil, err
		}
		if r.Status != store.RunRunning {
			return nil, &store.RunStateError{ID: r.ID, Status: r.Status, Op: "park"}
		}
		if p.Question == nil && p.WakeAt.IsZero() {
			return nil, fmt.Errorf("park run %s: neither a question nor a wake time", p.ID)
		}
		if r.CancelRequested {
			return nil, fmt.Errorf("park run %s: %w", p.ID, store.ErrCancelRequested)
		}
		r.Status = store.RunWaiting
		r.OwnerPID, r.Claim = 0, ""
		r.Question = nil
		if p.Question != nil {
			q := *p.Question
			q.Choices = append([]string(nil), p.Question.Choices...)
			r.Question = &q
		}
		r.WakeAt = time.Time{}
		if !p.WakeAt.IsZero() {
			r.WakeAt = p.WakeAt.UTC().Truncate(time.Millisecond)
		}
		return nil, nil
	}))
}

func (s *Store) ReleaseRun(ctx context.Context, id, claim string) (*store.Run, error) {
	return ownerResult(s.runWrite(ctx, "run.release", id, func(r *store.Run) (func(), error) {
		if err := owned(r, claim); err != nil {
			return nil, err
		}
		r.OwnerPID, r.Claim = 0, ""
		return nil, nil
	}))
}

func (s *Store) SettleRun(ctx context.Context, p store.SettleParams) (*store.Run, error) {
	return ownerResult(s.runWrite(ctx, "run.settle", p.ID, func(r *store.Run) (func(), error) {
		if err := owned(r, p.Claim); err != nil {
			return nil, err
		}
		if !p.Status.Settled() {
			return nil, fmt.Errorf("settle run %s: %q is not a final status", p.ID, p.Status)
		}
		if r.Status.Settled() {
			return nil, &store.RunStateError{ID: r.ID, Status: r.Status, Op: "settle"}
		}
		plan, err := s.runs.planFinishes(p.ID, p.Ledger)
		if err != nil {
			return nil, err
		}
		r.Status, r.Result, r.Error = p.Status, cloneRaw(p.Result), p.Error
		if len(p.Journal) > 0 {
			r.Journal = cloneRaw(p.Journal)
		}
		r.Claim, r.Question, r.WakeAt = "", nil, time.Time{}
		r.FinishedAt = time.Now().UTC().Truncate(time.Millisecond)
		return plan.commit, nil
	}))
}

// finishPlan is the ledger outcomes of one operation, checked, to store
// with commit.
type finishPlan struct {
	d       *runsData
	runID   string
	changes []finishChange
}

type finishChange struct{ old, e *store.LedgerEntry }

// planFinishes checks the outcomes fs of run id's calls, in order, without
// changing anything. The caller holds the store's lock.
func (d *runsData) planFinishes(id string, fs []store.StepFinish) (*finishPlan, error) {
	p := &finishPlan{d: d, runID: id}
	for _, f := range fs {
		if f.Path == "" || f.Position < 1 {
			return nil, fmt.Errorf("record step of run %s: bad call (path %q, position %d)", id, f.Path, f.Position)
		}
		f.RunID = id
		var base *store.LedgerEntry
		old := d.entry(id, f.Path, f.Position)
		if e := p.planned(f.Path, f.Position); e != nil { // an earlier outcome of this operation
			old, base = nil, e
		}
		if old != nil {
			base = cloneEntry(old)
		}
		e, err := finishEntry(base, f)
		if err != nil {
			return nil, err
		}
		p.changes = append(p.changes, finishChange{old, e})
	}
	return p, nil
}

// planned returns the entry the plan gives call (path, pos), or nil.
func (p *finishPlan) planned(path string, pos int) *store.LedgerEntry {
	for _, c := range p.changes {
		if c.e.Path == path && c.e.Position == pos {
			return c.e
		}
	}
	return nil
}

// commit stores the planned outcomes.
func (p *finishPlan) commit() {
	for _, c := range p.changes {
		if c.old != nil {
			*c.old = *c.e
			continue
		}
		c.e.Seq = int64(len(p.d.ledger[p.runID]) + 1)
		p.d.ledger[p.runID] = append(p.d.ledger[p.runID], c.e)
	}
}

func (s *Store) AnswerRun(ctx context.Context, p store.AnswerParams) (*store.Run, error) {
	return s.runWrite(ctx, "run.answer", p.ID, func(r *store.Run) (func(), error) {
		if r.Status != store.RunWaiting || r.Question == nil {
			return nil, &store.RunStateError{ID: r.ID, Status: r.Status, Op: "answer"}
		}
		if r.Question.ID != p.QuestionID {
			return nil, fmt.Errorf("answer run %s: question %q is no longer open: %w", r.ID, p.QuestionID, store.ErrStale)
		}
		e := s.runs.entry(r.ID, r.Question.Step, r.Question.Position)
		if e == nil {
			return nil, fmt.Errorf("answer run %s: no ledger entry for step %s call %d", r.ID, r.Question.Step, r.Question.Position)
		}
		r.Status = store.RunRunning
		r.Question, r.WakeAt = nil, time.Time{}
		answer := p.Answer
		return func() { e.Answer = &answer }, nil
	})
}

func (s *Store) CancelRun(ctx context.Context, id, reason string) (*store.Run, error) {
	return s.runWrite(ctx, "run.cancel", id, func(r *store.Run) (func(), error) {
		switch r.Status {
		case store.RunQueued, store.RunWaiting:
			r.Status = store.RunCancelled
			r.Error = reason
			r.OwnerPID, r.Claim, r.Question, r.WakeAt = 0, "", nil, time.Time{}
			r.CancelRequested = true
			r.FinishedAt = time.Now().UTC().Truncate(time.Millisecond)
		case store.RunRunning:
			r.CancelRequested = true
		default:
			return nil, &store.RunStateError{ID: r.ID, Status: r.Status, Op: "cancel"}
		}
		return nil, nil
	})
}

func (s *Store) RunClaims(ctx context.Context, ids []string) ([]store.RunClaim, error) {
	var out []store.RunClaim
	err := s.read(func() error {
		for _, id := range ids {
			if r, ok := s.runs.byID[id]; ok {
				out = append(out, store.RunClaim{ID: r.ID, Status: r.Status, Claim: r.Claim, CancelRequested: r.CancelRequested})
			}
		}
		return nil
	})
	return out, err
}

func (s *Store) ChangedRuns(ctx context.Context, after int64, limit int) ([]store.RunChange, error) {
	if limit <= 0 || limit > store.MaxListLimit {
		limit = store.MaxListLimit
	}
	var out []store.RunChange
	err := s.read(func() error {
		for id, n := range s.runs.seq {
			if n > after {
				out = append(out, store.RunChange{ID: id, Revision: s.runs.byID[id].Revision, Seq: n})
			}
		}
		return nil
	})
	slices.SortFunc(out, func(a, b store.RunChange) int { return cmp.Compare(a.Seq, b.Seq) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, err
}

func (s *Store) LastRunChange(ctx context.Context) (int64, error) {
	var n int64
	err := s.read(func() error {
		n = s.runs.last
		return nil
	})
	return n, err
}

// entry returns the stored ledger entry (not a copy), or nil.
func (d *runsData) entry(runID, path string, pos int) *store.LedgerEntry {
	for _, e := range d.ledger[runID] {
		if e.Path == path && e.Position == pos {
			return e
		}
	}
	return nil
}

// stepWrite checks the owner and the run's status, lets change prepare
// the new entry, then stores it and bumps the run's revision.
func (s *Store) stepWrite(ctx context.Context, kind string, runID, claim, path string, pos int, change func(old *store.LedgerEntry) (*store.LedgerEntry, error)) (*store.LedgerEntry, error) {
	if path == "" || pos < 1 {
		return nil, fmt.Errorf("record step of run %s: bad call (path %q, position %d)", runID, path, pos)
	}
	var out *store.LedgerEntry
	_, err := s.runWrite(ctx, kind, runID, func(r *store.Run) (func(), error) {
		if err := owned(r, claim); err != nil {
			return nil, err
		}
		if r.Status != store.RunRunning {
			return nil, &store.RunStateError{ID: r.ID, Status: r.Status, Op: "step"}
		}
		old := s.runs.entry(runID, path, pos)
		var base *store.LedgerEntry
		if old != nil {
			base = cloneEntry(old)
		}
		e, err := change(base)
		if err != nil {
			return nil, err
		}
		out = cloneEntry(e)
		return func() {
			if old != nil {
				*old = *e
				return
			}
			e.Seq = int64(len(s.runs.ledger[runID]) + 1)
			out.Seq = e.Seq
			s.runs.ledger[runID] = append(s.runs.ledger[runID], e)
		}, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) StartStep(ctx context.Context, p store.StepStart) (*store.LedgerEntry, error) {
	if len(p.Ledger) > 0 {
		return s.startAfter(ctx, p)
	}
	return s.stepWrite(ctx, "run.step.start", p.RunID, p.Claim, p.Path, p.Position, func(e *store.LedgerEntry) (*store.LedgerEntry, error) {
		return startEntry(e, p)
	})
}

// startAfter is StartStep with outcomes recorded first.
func (s *Store) startAfter(ctx context.Context, p store.StepStart) (*store.LedgerEntry, error) {
	if p.Path == "" || p.Position < 1 {
		return nil, fmt.Errorf("record step of run %s: bad call (path %q, position %d)", p.RunID, p.Path, p.Position)
	}
	var out *store.LedgerEntry
	_, err := s.runWrite(ctx, "run.step.start", p.RunID, func(r *store.Run) (func(), error) {
		if err := owned(r, p.Claim); err != nil {
			return nil, err
		}
		if r.Status != store.RunRunning {
			return nil, &store.RunStateError{ID: r.ID, Status: r.Status, Op: "step"}
		}
		plan, err := s.runs.planFinishes(p.RunID, p.Ledger)
		if err != nil {
			return nil, err
		}
		var base *store.LedgerEntry
		old := s.runs.entry(p.RunID, p.Path, p.Position)
		if e := plan.planned(p.Path, p.Position); e != nil {
			old, base = nil, e
		}
		if old != nil {
			base = cloneEntry(old)
		}
		e, err := startEntry(base, p)
		if err != nil {
			return nil, err
		}
		out = cloneEntry(e)
		return func() {
			plan.commit()
			if old != nil {
				*old = *e
				return
			}
			e.Seq = int64(len(s.runs.ledger[p.RunID]) + 1)
			out.Seq = e.Seq
			s.runs.ledger[p.RunID] = append(s.runs.ledger[p.RunID], e)
		}, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// startEntry applies a start to e (a copy, or nil when the call has no
// entry yet) and returns the entry to store.
func startEntry(e *store.LedgerEntry, p store.StepStart) (*store.LedgerEntry, error) {
	if e == nil {
		e = &store.LedgerEntry{RunID: p.RunID, Path: p.Path, Position: p.Position}
	} else if e.State == store.StepFinished {
		return nil, fmt.Errorf("start step %s call %d of run %s: %w (it finished already)", p.Path, p.Position, p.RunID, store.ErrExists)
	}
	e.Kind = p.Kind
	e.State = store.StepStarted
	e.Starts++
	e.Detail = cloneRaw(p.Detail)
	e.Answer = nil
	e.OwnerPID = p.PID
	e.StartedAt = time.Now().UTC().Truncate(time.Millisecond)
	return e, nil
}

func (s *Store) FinishStep(ctx context.Context, p store.StepFinish) (*store.LedgerEntry, error) {
	return s.stepWrite(ctx, "run.step.finish", p.RunID, p.Claim, p.Path, p.Position, func(e *store.LedgerEntry) (*store.LedgerEntry, error) {
		return finishEntry(e, p)
	})
}

// finishEntry applies a finish to e (a copy, or nil when the call has no
// entry yet) and returns the entry to store.
func finishEntry(e *store.LedgerEntry, p store.StepFinish) (*store.LedgerEntry, error) {
	if e == nil {
		e = &store.LedgerEntry{RunID: p.RunID, Path: p.Path, Position: p.Position, Kind: p.Kind}
	} else if e.State == store.StepFinished {
		return nil, fmt.Errorf("finish step %s call %d of run %s: %w (its outcome is recorded)", p.Path, p.Position, p.RunID, store.ErrExists)
	}
	e.Kind = cmp.Or(e.Kind, p.Kind)
	e.State = store.StepFinished
	e.Status = p.Status
	e.Result = cloneRaw(p.Result)
	e.Error = p.Error
	e.FinishedAt = time.Now().UTC().Truncate(time.Millisecond)
	return e, nil
}

func (s *Store) Ledger(ctx context.Context, runID string) ([]*store.LedgerEntry, error) {
	out := []*store.LedgerEntry{}
	err := s.read(func() error {
		if _, ok := s.runs.byID[runID]; !ok {
			return &store.NotFoundError{Kind: "run", ID: runID}
		}
		for _, e := range s.runs.ledger[runID] {
			out = append(out, cloneEntry(e))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
