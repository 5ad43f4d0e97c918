package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn/store"
)

const runColumns = "id, target, status, input, literals, trigger, session_id, result, error, owner_pid, claim, cancel_requested, question, wake_at, revision, created_at, updated_at, started_at, finished_at"

func (s *Store) CreateRun(ctx context.Context, r *store.Run) error {
	return s.write(ctx, "run.create", func(tx *sql.Tx) error { return s.insertRun(ctx, tx, r) })
}

// nextChange is the next number of the runs' change sequence (see
// ChangedRuns): an index lookup.
const nextChange = "(SELECT coalesce(max(change_seq), 0) + 1 FROM runs)"

var qInsertRun = prepared("INSERT INTO runs (" + runColumns + ", change_seq) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?," + nextChange + ") ON CONFLICT (id) DO NOTHING")

// insertRun adds r inside tx, filling defaults (status, revision 1,
// timestamps). Other writes that must queue a run in the same transaction
// (an automation's fire) call it too.
func (s *Store) insertRun(ctx context.Context, tx *sql.Tx, r *store.Run) error {
	r.SetCreateDefaults()
	args, err := runArgs(r)
	if err != nil {
		return err
	}
	res, err := s.exec(ctx, tx, qInsertRun, args...)
	if err != nil {
		return fmt.Errorf("insert run %s: %w", r.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("create run %s: %w", r.ID, store.ErrExists)
	}
	return nil
}

// runArgs are r's values in runColumns order.
func runArgs(r *store.Run) ([]any, error) {
	trig, err := json.Marshal(r.Trigger)
	if err != nil {
		return nil, fmt.Errorf("encode trigger of run %s: %w", r.ID, err)
	}
	var question any
	if r.Question != nil {
		b, err := json.Marshal(r.Question)
		if err != nil {
			return nil, fmt.Errorf("encode question of run %s: %w", r.ID, err)
		}
		question = string(b)
	}
	return []any{r.ID, r.Target, r.Status, string(r.Input), string(r.Literals), string(trig), r.SessionID,
		nullJSON(r.Result), r.Error, r.OwnerPID, r.Claim, r.CancelRequested, question, nullTime(r.WakeAt),
		r.Revision, r.CreatedAt.UnixMilli(), r.UpdatedAt.UnixMilli(), nullTime(r.StartedAt), nullTime(r.FinishedAt)}, nil
}

var (
	qGetRun        = prepared("SELECT " + runColumns + " FROM runs WHERE id = ?")
	qGetRunJournal = prepared("SELECT " + runColumns + ", journal FROM runs WHERE id = ?")
)

func (s *Store) GetRun(ctx context.Context, id string) (*store.Run, error) {
	var journal sql.NullString
	r, err := scanRun(s.queryRow(ctx, qGetRunJournal, id), &journal)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "run", ID: id}
	}
	if err != nil {
		return nil, err
	}
	if journal.Valid {
		r.Journal = []byte(journal.String)
	}
	return r, nil
}

// rowScanner is *sql.Row or *sql.Rows.
type rowScanner interface{ Scan(dest ...any) error }

// scanRun scans runColumns, then extra.
func scanRun(row rowScanner, extra ...any) (*store.Run, error) {
	var (
		r                       store.Run
		input, trig, literals   string
		result, question        sql.NullString
		wake, started, finished sql.NullInt64
		created, updated        int64
		cancelRequested         bool
	)
	dest := []any{&r.ID, &r.Target, &r.Status, &input, &literals, &trig, &r.SessionID, &result, &r.Error,
		&r.OwnerPID, &r.Claim, &cancelRequested, &question, &wake, &r.Revision, &created, &updated, &started, &finished}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	r.CancelRequested = cancelRequested
	r.Input = json.RawMessage(input)
	r.Literals = json.RawMessage(literals)
	if result.Valid {
		r.Result = json.RawMessage(result.String)
	}
	if err := json.Unmarshal([]byte(trig), &r.Trigger); err != nil {
		return nil, fmt.Errorf("decode trigger of run %s: %w", r.ID, err)
	}
	if question.Valid {
		r.Question = new(store.Question)
		if err := json.Unmarshal([]byte(question.String), r.Question); err != nil {
			return nil, fmt.Errorf("decode question of run %s: %w", r.ID, err)
		}
	}
	r.WakeAt = timeOf(wake)
	r.CreatedAt = time.UnixMilli(created).UTC()
	r.UpdatedAt = time.UnixMilli(updated).UTC()
	r.StartedAt = timeOf(started)
	r.FinishedAt = timeOf(finished)
	return &r, nil
}

// nullJSON stores an empty raw message as NULL.
func nullJSON(m json.RawMessage) any {
	if len(m) == 0 {
		return nil
	}
	return string(m)
}

// nullTime stores a zero time as NULL, others as unix milliseconds.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

func timeOf(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMilli(n.Int64).UTC()
}

func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]*store.Run, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, store.MaxListLimit)
	var (
		where []string
		args  []any
	)
	if len(f.Status) > 0 {
		ph := make([]string, len(f.Status))
		for i, st := range f.Status {
			ph[i] = "?"
			args = append(args, st)
		}
		where = append(where, "status IN ("+strings.Join(ph, ",")+")")
	}
	if f.Target != "" {
		where = append(where, "target = ?")
		args = append(args, f.Target)
	}
	if !f.UpdatedAfter.IsZero() {
		where = append(where, "updated_at > ?")
		args = append(args, f.UpdatedAfter.UnixMilli())
	}
	if f.Cursor != "" {
		ms, id, err := parseCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		where = append(where, "(created_at < ? OR (created_at = ? AND id < ?))")
		args = append(args, ms, ms, id)
	}
	q := "SELECT " + runColumns + " FROM runs"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY created_at DESC, id DESC LIMIT ?"
	args = append(args, limit+1)
	runs, err := s.queryRuns(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list runs: %w", err)
	}
	next := ""
	if len(runs) > limit {
		runs = runs[:limit]
		last := runs[limit-1]
		next = makeCursor(last)
	}
	return runs, next, nil
}

// makeCursor and parseCursor encode a page boundary: the last run's
// creation time and id.
func makeCursor(r *store.Run) string {
	return strconv.FormatInt(r.CreatedAt.UnixMilli(), 10) + "." + r.ID
}

func parseCursor(c string) (int64, string, error) {
	ms, id, ok := strings.Cut(c, ".")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || id == "" {
		return 0, "", fmt.Errorf("list runs: invalid cursor %q", c)
	}
	return n, id, nil
}

func (s *Store) queryRuns(ctx context.Context, q string, args ...any) ([]*store.Run, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

var qRunnableRuns = prepared("SELECT " + strings.Replace(runColumns, "literals", "'' AS literals", 1) +
	" FROM runs WHERE status IN ('queued', 'running') OR (status = 'waiting' AND wake_at IS NOT NULL AND wake_at <= ?) ORDER BY status = 'running', created_at, id LIMIT ?")

func (s *Store) RunnableRuns(ctx context.Context, now time.Time, limit int) ([]*store.Run, error) {
	if limit <= 0 {
		limit = 50
	}
	runs, err := s.queryRuns(ctx, qRunnableRuns, now.UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("list runnable runs: %w", err)
	}
	return runs, nil
}

var qCountPending = prepared("SELECT count(*) FROM runs WHERE status IN ('queued', 'running') OR (status = 'waiting' AND wake_at IS NOT NULL)")

func (s *Store) CountPending(ctx context.Context) (int, error) {
	var n int
	err := s.queryRow(ctx, qCountPending).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count pending runs: %w", err)
	}
	return n, nil
}

var qRunClaims = prepared("SELECT id, status, claim, cancel_requested FROM runs WHERE id IN (SELECT value FROM json_each(?))")

func (s *Store) RunClaims(ctx context.Context, ids []string) ([]store.RunClaim, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("read run claims: %w", err)
	}
	rows, err := s.query(ctx, qRunClaims, string(list))
	if err != nil {
		return nil, fmt.Errorf("read run claims: %w", err)
	}
	defer rows.Close()
	out := make([]store.RunClaim, 0, len(ids))
	for rows.Next() {
		var c store.RunClaim
		if err := rows.Scan(&c.ID, &c.Status, &c.Claim, &c.CancelRequested); err != nil {
			return nil, fmt.Errorf("read run claims: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read run claims: %w", err)
	}
	return out, nil
}

var (
	qChangedRuns   = prepared("SELECT id, revision, change_seq FROM runs WHERE change_seq > ? ORDER BY change_seq LIMIT ?")
	qLastRunChange = prepared("SELECT coalesce(max(change_seq), 0) FROM runs")
)

func (s *Store) ChangedRuns(ctx context.Context, after int64, limit int) ([]store.RunChange, error) {
	if limit <= 0 || limit > store.MaxListLimit {
		limit = store.MaxListLimit
	}
	rows, err := s.query(ctx, qChangedRuns, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list changed runs: %w", err)
	}
	defer rows.Close()
	var out []store.RunChange
	for rows.Next() {
		var c store.RunChange
		if err := rows.Scan(&c.ID, &c.Revision, &c.Seq); err != nil {
			return nil, fmt.Errorf("list changed runs: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list changed runs: %w", err)
	}
	return out, nil
}

func (s *Store) LastRunChange(ctx context.Context) (int64, error) {
	var n int64
	if err := s.queryRow(ctx, qLastRunChange).Scan(&n); err != nil {
		return 0, fmt.Errorf("read the last run change: %w", err)
	}
	return n, nil
}

// getRunTx reads a run inside a write transaction.
func (s *Store) getRunTx(ctx context.Context, tx *sql.Tx, id string) (*store.Run, error) {
	r, err := scanRun(s.txQueryRow(ctx, tx, qGetRun, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "run", ID: id}
	}
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	return r, nil
}

// ownedRunTx reads a run and checks that claim is its current claim.
// qGetOwnedRun reads a run for an owner's write, which neither needs nor
// returns its literals.
var qGetOwnedRun = prepared("SELECT " + strings.Replace(runColumns, "literals", "'' AS literals", 1) + " FROM runs WHERE id = ?")

func (s *Store) ownedRunTx(ctx context.Context, tx *sql.Tx, id, claim string) (*store.Run, error) {
	r, err := scanRun(s.txQueryRow(ctx, tx, qGetOwnedRun, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "run", ID: id}
	}
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	if claim == "" || r.Claim != claim {
		return nil, store.NotOwnerError(id)
	}
	return r, nil
}

var qUpdateRun = prepared(`UPDATE runs SET status = ?, result = ?, error = ?, owner_pid = ?, claim = ?,
	cancel_requested = ?, question = ?, wake_at = ?, revision = ?, updated_at = ?, started_at = ?, finished_at = ?,
	journal = coalesce(?, journal), change_seq = ` + nextChange + ` WHERE id = ?`)

// updateRunTx writes r's mutable columns back with the next revision.
func (s *Store) updateRunTx(ctx context.Context, tx *sql.Tx, r *store.Run) error {
	r.Revision++
	r.UpdatedAt = time.Now().UTC().Truncate(time.Millisecond)
	var question any
	if r.Question != nil {
		b, err := json.Marshal(r.Question)
		if err != nil {
			return fmt.Errorf("encode question of run %s: %w", r.ID, err)
		}
		question = string(b)
	}
	_, err := s.exec(ctx, tx, qUpdateRun,
		r.Status, nullJSON(r.Result), r.Error, r.OwnerPID, r.Claim, r.CancelRequested, question, nullTime(r.WakeAt),
		r.Revision, r.UpdatedAt.UnixMilli(), nullTime(r.StartedAt), nullTime(r.FinishedAt), nullJSON(r.Journal), r.ID)
	if err != nil {
		return fmt.Errorf("update run %s: %w", r.ID, err)
	}
	return nil
}

// runWrite reads run id in a write, lets change modify it, and writes it
// back. The run returned is valid only when the error is nil.
func (s *Store) runWrite(ctx context.Context, kind, id string, read func(tx *sql.Tx) (*store.Run, error), change func(tx *sql.Tx, r *store.Run) error) (*store.Run, error) {
	var out *store.Run
	err := s.write(ctx, kind, func(tx *sql.Tx) error {
		r, err := read(tx)
		if err != nil {
			return err
		}
		if err := change(tx, r); err != nil {
			return err
		}
		if err := s.updateRunTx(ctx, tx, r); err != nil {
			return err
		}
		out = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) ClaimRun(ctx context.Context, p store.ClaimParams) (*store.Claimed, error) {
	var prev store.Claimed
	r, err := s.runWrite(ctx, "run.claim", p.ID,
		func(tx *sql.Tx) (*store.Run, error) { return s.getRunTx(ctx, tx, p.ID) },
		func(tx *sql.Tx, r *store.Run) error {
			if p.Claim == "" {
				return fmt.Errorf("claim run %s: empty claim token", p.ID)
			}
			if !r.Runnable(p.Now) {
				return &store.RunStateError{ID: r.ID, Status: r.Status, Op: "claim"}
			}
			prev = store.Claimed{PrevStatus: r.Status, PrevOwnerPID: r.OwnerPID}
			claimRun(r, p)
			return nil
		})
	if err != nil {
		return nil, err
	}
	prev.Run = r
	return &prev, nil
}

// claimRun applies a claim to r (shared by both backends in spirit; the
// memory store has its own copy).
func claimRun(r *store.Run, p store.ClaimParams) {
	r.Status = store.RunRunning
	r.OwnerPID, r.Claim = p.PID, p.Claim
	r.Question, r.WakeAt = nil, time.Time{}
	if r.StartedAt.IsZero() {
		r.StartedAt = time.Now().UTC().Truncate(time.Millisecond)
	}
}

func (s *Store) ParkRun(ctx context.Context, p store.ParkParams) (*store.Run, error) {
	return s.runWrite(ctx, "run.park", p.ID,
		func(tx *sql.Tx) (*store.Run, error) { return s.ownedRunTx(ctx, tx, p.ID, p.Claim) },
		func(tx *sql.Tx, r *store.Run) error {
			if r.Status != store.RunRunning {
				return &store.RunStateError{ID: r.ID, Status: r.Status, Op: "park"}
			}
			if p.Question == nil && p.WakeAt.IsZero() {
				return fmt.Errorf("park run %s: neither a question nor a wake time", p.ID)
			}
			if r.CancelRequested {
				return fmt.Errorf("park run %s: %w", p.ID, store.ErrCancelRequested)
			}
			r.Status = store.RunWaiting
			r.OwnerPID, r.Claim = 0, ""
			r.Question = cloneQuestion(p.Question)
			r.WakeAt = p.WakeAt.UTC().Truncate(time.Millisecond)
			return nil
		})
}

func cloneQuestion(q *store.Question) *store.Question {
	if q == nil {
		return nil
	}
	c := *q
	c.Choices = append([]string(nil), q.Choices...)
	return &c
}

func (s *Store) ReleaseRun(ctx context.Context, id, claim string) (*store.Run, error) {
	return s.runWrite(ctx, "run.release", id,
		func(tx *sql.Tx) (*store.Run, error) { return s.ownedRunTx(ctx, tx, id, claim) },
		func(tx *sql.Tx, r *store.Run) error {
			r.OwnerPID, r.Claim = 0, ""
			return nil
		})
}

func (s *Store) SettleRun(ctx context.Context, p store.SettleParams) (*store.Run, error) {
	return s.runWrite(ctx, "run.settle", p.ID,
		func(tx *sql.Tx) (*store.Run, error) { return s.ownedRunTx(ctx, tx, p.ID, p.Claim) },
		func(tx *sql.Tx, r *store.Run) error {
			if !p.Status.Settled() {
				return fmt.Errorf("settle run %s: %q is not a final status", p.ID, p.Status)
			}
			if r.Status.Settled() {
				return &store.RunStateError{ID: r.ID, Status: r.Status, Op: "settle"}
			}
			for _, f := range p.Ledger {
				f.RunID, f.Claim = p.ID, p.Claim
				if err := s.recordTx(ctx, tx, f); err != nil {
					return err
				}
			}
			r.Status, r.Result, r.Error = p.Status, p.Result, p.Error
			r.Journal = p.Journal
			r.Claim, r.Question, r.WakeAt = "", nil, time.Time{}
			r.FinishedAt = time.Now().UTC().Truncate(time.Millisecond)
			return nil
		})
}

var qAnswerEntry = prepared("UPDATE run_ledger SET answer = ? WHERE run_id = ? AND path = ? AND position = ?")

func (s *Store) AnswerRun(ctx context.Context, p store.AnswerParams) (*store.Run, error) {
	return s.runWrite(ctx, "run.answer", p.ID,
		func(tx *sql.Tx) (*store.Run, error) { return s.getRunTx(ctx, tx, p.ID) },
		func(tx *sql.Tx, r *store.Run) error {
			if r.Status != store.RunWaiting || r.Question == nil {
				return &store.RunStateError{ID: r.ID, Status: r.Status, Op: "answer"}
			}
			if r.Question.ID != p.QuestionID {
				return fmt.Errorf("answer run %s: question %q is no longer open: %w", r.ID, p.QuestionID, store.ErrStale)
			}
			res, err := s.exec(ctx, tx, qAnswerEntry, p.Answer, r.ID, r.Question.Step, r.Question.Position)
			if err != nil {
				return fmt.Errorf("answer run %s: %w", r.ID, err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return fmt.Errorf("answer run %s: no ledger entry for step %s call %d", r.ID, r.Question.Step, r.Question.Position)
			}
			r.Status = store.RunRunning
			r.Question, r.WakeAt = nil, time.Time{}
			return nil
		})
}

func (s *Store) CancelRun(ctx context.Context, id, reason string) (*store.Run, error) {
	return s.runWrite(ctx, "run.cancel", id,
		func(tx *sql.Tx) (*store.Run, error) { return s.getRunTx(ctx, tx, id) },
		func(tx *sql.Tx, r *store.Run) error { return cancelRun(r, reason) })
}

// cancelRun applies a cancel request to r.
func cancelRun(r *store.Run, reason string) error {
	switch r.Status {
	case store.RunQueued, store.RunWaiting:
		r.Status = store.RunCancelled
		r.Error = reason
		r.OwnerPID, r.Claim, r.Question, r.WakeAt = 0, "", nil, time.Time{}
		r.CancelRequested = true
		r.FinishedAt = time.Now().UTC().Truncate(time.Millisecond)
	case store.RunRunning:
		if r.CancelRequested {
			return nil // asked already; the revision still moves
		}
		r.CancelRequested = true
	default:
		return &store.RunStateError{ID: r.ID, Status: r.Status, Op: "cancel"}
	}
	return nil
}

const ledgerColumns = "run_id, path, position, seq, kind, state, status, starts, detail, result, error, answer, owner_pid, started_at, finished_at"

func scanLedger(row rowScanner) (*store.LedgerEntry, error) {
	var (
		e                      store.LedgerEntry
		detail, result, answer sql.NullString
		started, finished      sql.NullInt64
	)
	if err := row.Scan(&e.RunID, &e.Path, &e.Position, &e.Seq, &e.Kind, &e.State, &e.Status, &e.Starts,
		&detail, &result, &e.Error, &answer, &e.OwnerPID, &started, &finished); err != nil {
		return nil, err
	}
	if detail.Valid {
		e.Detail = json.RawMessage(detail.String)
	}
	if result.Valid {
		e.Result = json.RawMessage(result.String)
	}
	if answer.Valid {
		a := answer.String
		e.Answer = &a
	}
	e.StartedAt, e.FinishedAt = timeOf(started), timeOf(finished)
	return &e, nil
}

var (
	qGetEntry  = prepared("SELECT " + ledgerColumns + " FROM run_ledger WHERE run_id = ? AND path = ? AND position = ?")
	qPutEntry  = prepared("INSERT OR REPLACE INTO run_ledger (" + ledgerColumns + ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
	qNextSeq   = prepared("SELECT coalesce(max(seq), 0) + 1 FROM run_ledger WHERE run_id = ?")
	qRunExists = prepared("SELECT 1 FROM runs WHERE id = ?")
	qLedger    = prepared("SELECT " + ledgerColumns + " FROM run_ledger WHERE run_id = ? ORDER BY seq")
)

func (s *Store) getEntryTx(ctx context.Context, tx *sql.Tx, runID, path string, pos int) (*store.LedgerEntry, error) {
	e, err := scanLedger(s.txQueryRow(ctx, tx, qGetEntry, runID, path, pos))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return e, err
}

// putEntryTx inserts or replaces a ledger entry.
func (s *Store) putEntryTx(ctx context.Context, tx *sql.Tx, e *store.LedgerEntry) error {
	var answer any
	if e.Answer != nil {
		answer = *e.Answer
	}
	_, err := s.exec(ctx, tx, qPutEntry,
		e.RunID, e.Path, e.Position, e.Seq, e.Kind, e.State, e.Status, e.Starts, nullJSON(e.Detail), nullJSON(e.Result),
		e.Error, answer, e.OwnerPID, nullTime(e.StartedAt), nullTime(e.FinishedAt))
	if err != nil {
		return fmt.Errorf("record step %s of run %s: %w", e.Path, e.RunID, err)
	}
	return nil
}

func (s *Store) nextSeqTx(ctx context.Context, tx *sql.Tx, runID string) (int64, error) {
	var n int64
	err := s.txQueryRow(ctx, tx, qNextSeq, runID).Scan(&n)
	return n, err
}

// stepWrite runs a ledger change for the owner of a running run and bumps
// the run's revision.
func (s *Store) stepWrite(ctx context.Context, kind, runID, claim string, change func(tx *sql.Tx, r *store.Run) (*store.LedgerEntry, error)) (*store.LedgerEntry, error) {
	var out *store.LedgerEntry
	_, err := s.runWrite(ctx, kind, runID,
		func(tx *sql.Tx) (*store.Run, error) { return s.ownedRunTx(ctx, tx, runID, claim) },
		func(tx *sql.Tx, r *store.Run) error {
			if r.Status != store.RunRunning {
				return &store.RunStateError{ID: r.ID, Status: r.Status, Op: "step"}
			}
			e, err := change(tx, r)
			if err != nil {
				return err
			}
			out = e
			return s.putEntryTx(ctx, tx, e)
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) StartStep(ctx context.Context, p store.StepStart) (*store.LedgerEntry, error) {
	if err := checkCall(p.RunID, p.Path, p.Position); err != nil {
		return nil, err
	}
	return s.stepWrite(ctx, "run.step.start", p.RunID, p.Claim, func(tx *sql.Tx, r *store.Run) (*store.LedgerEntry, error) {
		for _, f := range p.Ledger {
			f.RunID, f.Claim = p.RunID, p.Claim
			if err := s.recordTx(ctx, tx, f); err != nil {
				return nil, err
			}
		}
		e, err := s.getEntryTx(ctx, tx, p.RunID, p.Path, p.Position)
		if err != nil {
			return nil, err
		}
		if e == nil {
			seq, err := s.nextSeqTx(ctx, tx, p.RunID)
			if err != nil {
				return nil, err
			}
			e = &store.LedgerEntry{RunID: p.RunID, Path: p.Path, Position: p.Position, Seq: seq}
		} else if e.State == store.StepFinished {
			return nil, fmt.Errorf("start step %s call %d of run %s: %w (it finished already)", p.Path, p.Position, p.RunID, store.ErrExists)
		}
		startEntry(e, p)
		return e, nil
	})
}

// startEntry applies a start to e.
func startEntry(e *store.LedgerEntry, p store.StepStart) {
	e.Kind = p.Kind
	e.State = store.StepStarted
	e.Starts++
	e.Detail = append(json.RawMessage(nil), p.Detail...)
	if len(p.Detail) == 0 {
		e.Detail = nil
	}
	e.Answer = nil
	e.OwnerPID = p.PID
	e.StartedAt = time.Now().UTC().Truncate(time.Millisecond)
}

func (s *Store) FinishStep(ctx context.Context, p store.StepFinish) (*store.LedgerEntry, error) {
	if err := checkCall(p.RunID, p.Path, p.Position); err != nil {
		return nil, err
	}
	var out *store.LedgerEntry
	_, err := s.runWrite(ctx, "run.step.finish", p.RunID,
		func(tx *sql.Tx) (*store.Run, error) { return s.ownedRunTx(ctx, tx, p.RunID, p.Claim) },
		func(tx *sql.Tx, r *store.Run) error {
			if r.Status != store.RunRunning {
				return &store.RunStateError{ID: r.ID, Status: r.Status, Op: "step"}
			}
			e, err := s.finishTx(ctx, tx, p)
			out = e
			return err
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// finishTx records a call's outcome in tx (the caller checked the owner).
func (s *Store) finishTx(ctx context.Context, tx *sql.Tx, p store.StepFinish) (*store.LedgerEntry, error) {
	if err := checkCall(p.RunID, p.Path, p.Position); err != nil {
		return nil, err
	}
	e, err := s.getEntryTx(ctx, tx, p.RunID, p.Path, p.Position)
	if err != nil {
		return nil, err
	}
	if e == nil {
		seq, err := s.nextSeqTx(ctx, tx, p.RunID)
		if err != nil {
			return nil, err
		}
		e = &store.LedgerEntry{RunID: p.RunID, Path: p.Path, Position: p.Position, Seq: seq, Kind: p.Kind}
	} else if e.State == store.StepFinished {
		return nil, fmt.Errorf("finish step %s call %d of run %s: %w (its outcome is recorded)", p.Path, p.Position, p.RunID, store.ErrExists)
	}
	finishEntry(e, p)
	return e, s.putEntryTx(ctx, tx, e)
}

// qRecordOutcome records a call's outcome: a new entry for a call never
// started, or the finish of a started one; nothing for a finished one.
var qRecordOutcome = prepared(`INSERT INTO run_ledger (run_id, path, position, seq, kind, state, status, starts, result, error, owner_pid, finished_at)
	VALUES (?, ?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM run_ledger WHERE run_id = ?), ?, 'finished', ?, 0, ?, ?, 0, ?)
	ON CONFLICT (run_id, path, position) DO UPDATE SET kind = CASE WHEN kind = '' THEN excluded.kind ELSE kind END, state = 'finished',
	status = excluded.status, result = excluded.result, error = excluded.error, finished_at = excluded.finished_at WHERE state = 'started'`)

// recordTx records a call's outcome in tx, as finishTx does, in one
// statement and without reading the entry back.
func (s *Store) recordTx(ctx context.Context, tx *sql.Tx, p store.StepFinish) error {
	if err := checkCall(p.RunID, p.Path, p.Position); err != nil {
		return err
	}
	now := time.Now().UTC().Truncate(time.Millisecond).UnixMilli()
	res, err := s.exec(ctx, tx, qRecordOutcome, p.RunID, p.Path, p.Position, p.RunID, p.Kind, p.Status, nullJSON(p.Result), p.Error, now)
	if err != nil {
		return fmt.Errorf("record step %s of run %s: %w", p.Path, p.RunID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	return fmt.Errorf("finish step %s call %d of run %s: %w (its outcome is recorded)", p.Path, p.Position, p.RunID, store.ErrExists)
}

// finishEntry applies a finish to e.
func finishEntry(e *store.LedgerEntry, p store.StepFinish) {
	if e.Kind == "" {
		e.Kind = p.Kind
	}
	e.State = store.StepFinished
	e.Status = p.Status
	e.Result = append(json.RawMessage(nil), p.Result...)
	if len(p.Result) == 0 {
		e.Result = nil
	}
	e.Error = p.Error
	e.FinishedAt = time.Now().UTC().Truncate(time.Millisecond)
}

// checkCall refuses an empty step path or a position below 1.
func checkCall(runID, path string, pos int) error {
	if path == "" || pos < 1 {
		return fmt.Errorf("record step of run %s: bad call (path %q, position %d)", runID, path, pos)
	}
	return nil
}

func (s *Store) Ledger(ctx context.Context, runID string) ([]*store.LedgerEntry, error) {
	var one int
	if err := s.queryRow(ctx, qRunExists, runID).Scan(&one); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, &store.NotFoundError{Kind: "run", ID: runID}
		}
		return nil, fmt.Errorf("read ledger of run %s: %w", runID, err)
	}
	rows, err := s.query(ctx, qLedger, runID)
	if err != nil {
		return nil, fmt.Errorf("read ledger of run %s: %w", runID, err)
	}
	defer rows.Close()
	out := []*store.LedgerEntry{}
	for rows.Next() {
		e, err := scanLedger(rows)
		if err != nil {
			return nil, fmt.Errorf("read ledger of run %s: %w", runID, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
