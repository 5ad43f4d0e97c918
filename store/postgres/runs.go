package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// querier is what reads need: the pool, or a write's transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const runColumns = "id, target, status, input, literals, trigger, session_id, result, error, owner_pid, claim, cancel_requested, question, wake_at, revision, created_at, updated_at, started_at, finished_at"

// ownedColumns are runColumns without the literals, which an owner's
// write and RunnableRuns neither need nor return.
var ownedColumns = strings.Replace(runColumns, "literals", "'' AS literals", 1)

// nextChange takes the next number of the runs' change sequence; the row
// lock it takes is held until the write commits (see run_changes).
const nextChange = "(UPDATE run_changes SET last = last + 1 RETURNING last)"

func (s *Store) CreateRun(ctx context.Context, r *store.Run) error {
	return s.write(ctx, "run.create", func(tx pgx.Tx) error { return insertRunTx(ctx, tx, r) })
}

// insertRunTx adds r inside tx, filling defaults (status, revision 1,
// timestamps); a taken id is refused with store.ErrExists. Writes that
// queue a run with something else (an automation's fire) call it too.
func insertRunTx(ctx context.Context, tx pgx.Tx, r *store.Run) error {
	r.SetCreateDefaults()
	trig, err := json.Marshal(r.Trigger)
	if err != nil {
		return fmt.Errorf("encode trigger of run %s: %w", r.ID, err)
	}
	question, err := questionText(r)
	if err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, "WITH c AS "+nextChange+" INSERT INTO runs ("+runColumns+", journal, change_seq) "+
		"VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20, (SELECT last FROM c)) ON CONFLICT (id) DO NOTHING",
		r.ID, r.Target, r.Status, string(r.Input), string(r.Literals), string(trig), r.SessionID,
		nullJSON(r.Result), r.Error, r.OwnerPID, r.Claim, r.CancelRequested, question, nullTime(r.WakeAt),
		r.Revision, r.CreatedAt, r.UpdatedAt, nullTime(r.StartedAt), nullTime(r.FinishedAt), journalBytes(r.Journal))
	if err != nil {
		return fmt.Errorf("insert run %s: %w", r.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("create run %s: %w", r.ID, store.ErrExists)
	}
	return nil
}

func questionText(r *store.Run) (*string, error) {
	if r.Question == nil {
		return nil, nil
	}
	q, err := jsonText(r.Question)
	if err != nil {
		return nil, fmt.Errorf("encode question of run %s: %w", r.ID, err)
	}
	return q, nil
}

// journalBytes stores an empty journal as NULL.
func journalBytes(j []byte) []byte {
	if len(j) == 0 {
		return nil
	}
	return j
}

func (s *Store) GetRun(ctx context.Context, id string) (*store.Run, error) {
	var journal []byte
	r, err := scanRun(s.pool.QueryRow(ctx, "SELECT "+runColumns+", journal FROM runs WHERE id = $1", id), &journal)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &store.NotFoundError{Kind: "run", ID: id}
	}
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	r.Journal = journalBytes(journal)
	return r, nil
}

// scanRun scans runColumns, then extra.
func scanRun(row pgx.Row, extra ...any) (*store.Run, error) {
	var (
		r                       store.Run
		input, trig, literals   string
		result, question        *string
		wake, started, finished *time.Time
		created, updated        time.Time
	)
	dest := []any{&r.ID, &r.Target, &r.Status, &input, &literals, &trig, &r.SessionID, &result, &r.Error,
		&r.OwnerPID, &r.Claim, &r.CancelRequested, &question, &wake, &r.Revision, &created, &updated, &started, &finished}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	r.Input = json.RawMessage(input)
	if literals != "" {
		r.Literals = json.RawMessage(literals)
	}
	r.Result = rawOf(result)
	if err := json.Unmarshal([]byte(trig), &r.Trigger); err != nil {
		return nil, fmt.Errorf("decode trigger of run %s: %w", r.ID, err)
	}
	if question != nil {
		r.Question = new(store.Question)
		if err := json.Unmarshal([]byte(*question), r.Question); err != nil {
			return nil, fmt.Errorf("decode question of run %s: %w", r.ID, err)
		}
	}
	r.WakeAt, r.StartedAt, r.FinishedAt = timeOf(wake), timeOf(started), timeOf(finished)
	r.CreatedAt, r.UpdatedAt = created.UTC(), updated.UTC()
	return &r, nil
}

func queryRuns(ctx context.Context, q querier, sql string, args ...any) ([]*store.Run, error) {
	rows, err := q.Query(ctx, sql, args...)
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

func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]*store.Run, string, error) {
	limit := f.ListLimit()
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if len(f.Status) > 0 {
		st := make([]string, len(f.Status))
		for i, v := range f.Status {
			st[i] = string(v)
		}
		where = append(where, "status = ANY("+arg(st)+")")
	}
	if f.Target != "" {
		where = append(where, "target = "+arg(f.Target))
	}
	if !f.UpdatedAfter.IsZero() {
		where = append(where, "updated_at > "+arg(store.Millis(f.UpdatedAfter)))
	}
	if f.Cursor != "" {
		ms, id, err := store.ParseRunCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		at := time.UnixMilli(ms).UTC()
		where = append(where, "(created_at, id) < ("+arg(at)+"::timestamptz, "+arg(id)+"::text)")
	}
	q := "SELECT " + runColumns + " FROM runs"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY created_at DESC, id DESC LIMIT " + arg(limit+1)
	runs, err := queryRuns(ctx, s.pool, q, args...)
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

func (s *Store) RunnableRuns(ctx context.Context, now time.Time, limit int) ([]*store.Run, error) {
	if limit <= 0 {
		limit = 50
	}
	runs, err := queryRuns(ctx, s.pool, "SELECT "+ownedColumns+" FROM runs WHERE status IN ('queued', 'running') "+
		"OR (status = 'waiting' AND wake_at IS NOT NULL AND wake_at <= $1) ORDER BY status = 'running', created_at, id LIMIT $2",
		store.Millis(now), limit)
	if err != nil {
		return nil, fmt.Errorf("list runnable runs: %w", err)
	}
	return runs, nil
}

func (s *Store) CountPending(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, "SELECT count(*) FROM runs WHERE status IN ('queued', 'running') OR (status = 'waiting' AND wake_at IS NOT NULL)").Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count pending runs: %w", err)
	}
	return n, nil
}

func (s *Store) RunClaims(ctx context.Context, ids []string) ([]store.RunClaim, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, "SELECT id, status, claim, cancel_requested FROM runs WHERE id = ANY($1)", ids)
	if err != nil {
		return nil, fmt.Errorf("read run claims: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.RunClaim, error) {
		var c store.RunClaim
		err := row.Scan(&c.ID, &c.Status, &c.Claim, &c.CancelRequested)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("read run claims: %w", err)
	}
	return out, nil
}

func (s *Store) ChangedRuns(ctx context.Context, after int64, limit int) ([]store.RunChange, error) {
	if limit <= 0 || limit > store.MaxListLimit {
		limit = store.MaxListLimit
	}
	rows, err := s.pool.Query(ctx, "SELECT id, revision, change_seq FROM runs WHERE change_seq > $1 ORDER BY change_seq LIMIT $2", after, limit)
	if err != nil {
		return nil, fmt.Errorf("list changed runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.RunChange, error) {
		var c store.RunChange
		err := row.Scan(&c.ID, &c.Revision, &c.Seq)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("list changed runs: %w", err)
	}
	return out, nil
}

func (s *Store) LastRunChange(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, "SELECT last FROM run_changes").Scan(&n); err != nil {
		return 0, fmt.Errorf("read the last run change: %w", err)
	}
	return n, nil
}
