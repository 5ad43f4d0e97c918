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

const runColumns = "id, target, status, input, literals, trigger, session_id, result, error, owner_pid, claim, cancel_requested, question, wake_at, revision, created_at, updated_at, started_at, finished_at"

func (s *Store) CreateRun(ctx context.Context, r *store.Run) error {
	// Encode before queueing: the writer goroutine runs every write in
	// turn, and the caller's goroutine can do this part in parallel.
	r.SetCreateDefaults()
	args, err := runArgs(r)
	if err != nil {
		return err
	}
	return s.write(ctx, "run.create", func(tx *sql.Tx) error { return s.insertRunArgs(ctx, tx, r.ID, args) })
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
	return s.insertRunArgs(ctx, tx, r.ID, args)
}

// insertRunArgs adds run id, whose values in runColumns order are args.
func (s *Store) insertRunArgs(ctx context.Context, tx *sql.Tx, id string, args []any) error {
	res, err := s.exec(ctx, tx, qInsertRun, args...)
	if err != nil {
		return fmt.Errorf("insert run %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("create run %s: %w", id, store.ErrExists)
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

// scanRows scans the rows a query returned (qerr: its error) with scan,
// appending to out, and closes them.
func scanRows[T any](rows *sql.Rows, qerr error, scan func(rowScanner) (T, error), out []T) ([]T, error) {
	if qerr != nil {
		return nil, qerr
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func scanRunRow(row rowScanner) (*store.Run, error) { return scanRun(row) }

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
	r.CreatedAt = millisTime(created)
	r.UpdatedAt = millisTime(updated)
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

// timeOf reads a nullable time column; NULL is the zero time.
func timeOf(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return millisTime(n.Int64)
}

// millisTime reads a time column: unix milliseconds, as UTC.
func millisTime(ms int64) time.Time {
	return time.UnixMilli(ms).UTC()
}

func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]*store.Run, string, error) {
	limit := f.ListLimit()
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
		ms, id, err := store.ParseRunCursor(f.Cursor)
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
		next = store.RunCursor(runs[limit-1])
	}
	return runs, next, nil
}

func (s *Store) queryRuns(ctx context.Context, q string, args ...any) ([]*store.Run, error) {
	rows, err := s.query(ctx, q, args...)
	return scanRows(rows, err, scanRunRow, nil)
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
