package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"sync"
)

// SQL text is parsed once per connection, not once per call: modernc's
// driver prepares every statement it is handed as text again, which costs
// more than running it. A statement declared with prepared is prepared the
// first time it is used and kept until Close; Open prepares nothing, so a
// store pays only for the statements it runs.
//
// The write side has one connection, held by the open transaction while a
// batch runs, so a statement cannot be prepared on s.w then (it would wait
// for the connection forever). The first use in a transaction prepares it
// on that transaction (for the rest of the batch) and queues it; the writer
// goroutine prepares the queued ones on s.w after the batch, when the
// connection is free again. Only the writer goroutine touches wstmts and
// wpending.

// statements holds every SQL text declared with prepared.
var statements = map[string]bool{}

// prepared declares a statement to keep prepared and returns its text,
// so a package-level var holds both: var qFoo = prepared("SELECT ...").
func prepared(query string) string {
	statements[query] = true
	return query
}

// stmtCache holds the statements prepared so far.
type stmtCache struct {
	wstmts   map[string]*sql.Stmt // prepared on s.w
	wpending map[string]*sql.Stmt // prepared on the batch's transaction, not yet on s.w
	rstmts   sync.Map             // query -> *sql.Stmt prepared on s.r
	// txStmts are wstmts bound to the batch's transaction txOf (set by
	// commit while the batch runs, nil otherwise): a batch runs the same
	// few statements many times, and binding one to a transaction
	// (sql.Tx.StmtContext) each time costs a lock and an allocation.
	txOf    *sql.Tx
	txStmts map[string]*sql.Stmt
}

// txStmt returns query prepared for tx, or nil when query was not declared
// with prepared.
func (s *Store) txStmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if !statements[query] {
		return nil, nil
	}
	batch := tx == s.txOf
	if st, ok := s.txStmts[query]; ok && batch {
		return st, nil
	}
	if st, ok := s.wstmts[query]; ok {
		bound := tx.StmtContext(ctx, st)
		if batch {
			if s.txStmts == nil {
				s.txStmts = map[string]*sql.Stmt{}
			}
			s.txStmts[query] = bound
		}
		return bound, nil
	}
	if st, ok := s.wpending[query]; ok {
		return st, nil
	}
	st, err := tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if s.wpending == nil {
		s.wpending = map[string]*sql.Stmt{}
	}
	s.wpending[query] = st
	return st, nil
}

// batchTx makes tx the batch's transaction for txStmt until the returned
// func is called, when tx has ended (its statements with it).
func (s *Store) batchTx(tx *sql.Tx) (end func()) {
	s.txOf = tx
	return func() {
		s.txOf = nil
		clear(s.txStmts)
	}
}

// prepareQueued prepares on s.w the statements the last batch's transaction
// prepared for itself (they ended with it). The writer goroutine calls it
// after each batch. A statement that fails to prepare is queued again when
// next used.
func (s *Store) prepareQueued() {
	for q := range s.wpending {
		delete(s.wpending, q)
		st, err := s.w.PrepareContext(context.Background(), q)
		if err != nil {
			continue
		}
		if s.wstmts == nil {
			s.wstmts = map[string]*sql.Stmt{}
		}
		s.wstmts[q] = st
	}
}

// readStmt returns query prepared on the read pool, or nil when it was not
// declared with prepared or cannot be prepared there (a write, on
// query-only readers; or ctx ended).
func (s *Store) readStmt(ctx context.Context, query string) *sql.Stmt {
	if !statements[query] {
		return nil
	}
	if st, ok := s.rstmts.Load(query); ok {
		return st.(*sql.Stmt)
	}
	st, err := s.r.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	if prev, loaded := s.rstmts.LoadOrStore(query, st); loaded {
		st.Close() // another reader prepared it first
		return prev.(*sql.Stmt)
	}
	return st
}

// closeStatements releases the prepared statements, after the writer
// goroutine has stopped.
func (s *Store) closeStatements() {
	for _, st := range s.wstmts {
		st.Close()
	}
	s.rstmts.Range(func(_, st any) bool {
		st.(*sql.Stmt).Close()
		return true
	})
}

// exec runs a write statement in tx.
func (s *Store) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := s.txStmt(ctx, tx, query)
	if err != nil {
		return nil, err
	}
	if st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// txQueryRow runs a one-row query in tx.
func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st, err := s.txStmt(ctx, tx, query); err == nil && st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// txQuery runs a query in tx.
func (s *Store) txQuery(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	st, err := s.txStmt(ctx, tx, query)
	if err != nil {
		return nil, err
	}
	if st != nil {
		return st.QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}

// queryRow runs a one-row query on the read pool.
func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := s.readStmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.r.QueryRowContext(ctx, query, args...)
}

// query runs a query on the read pool.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := s.readStmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.r.QueryContext(ctx, query, args...)
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
