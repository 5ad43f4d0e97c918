package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// SQL text is parsed once per connection, not once per call: modernc's
// driver prepares every statement it is handed as text again, which costs
// more than running it. Statements declared with prepared are prepared on
// the write connection (and the read pool) at Open; exec and queryRow run
// them inside a transaction without parsing.

// statements lists every SQL text declared with prepared.
var statements []string

// prepared declares a statement to prepare at Open and returns its text,
// so a package-level var holds both: var qFoo = prepared("SELECT ...").
func prepared(query string) string {
	statements = append(statements, query)
	return query
}

// prepareAll prepares every declared statement on the write connection and
// the read pool. It runs before the writer goroutine starts, while the one
// write connection is free.
func (s *Store) prepareAll(ctx context.Context) error {
	s.wstmts = make(map[string]*sql.Stmt, len(statements))
	s.rstmts = make(map[string]*sql.Stmt, len(statements))
	for _, q := range statements {
		ws, err := s.w.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", q, err)
		}
		s.wstmts[q] = ws
		rs, err := s.r.PrepareContext(ctx, q)
		if err == nil { // writes cannot be prepared on query-only readers
			s.rstmts[q] = rs
		}
	}
	return nil
}

// closeStatements releases the prepared statements.
func (s *Store) closeStatements() {
	for _, m := range []map[string]*sql.Stmt{s.wstmts, s.rstmts} {
		for _, st := range m {
			st.Close()
		}
	}
}

// txStmt returns query's prepared statement bound to tx, or nil when it was
// not declared with prepared.
func (s *Store) txStmt(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	if st, ok := s.wstmts[query]; ok {
		return tx.StmtContext(ctx, st)
	}
	return nil
}

// exec runs a write statement in tx.
func (s *Store) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := s.txStmt(ctx, tx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// txQueryRow runs a one-row query in tx.
func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := s.txStmt(ctx, tx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// txQuery runs a query in tx.
func (s *Store) txQuery(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if st := s.txStmt(ctx, tx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}

// queryRow runs a one-row query on the read pool.
func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := s.rstmts[query]; ok {
		return st.QueryRowContext(ctx, args...)
	}
	return s.r.QueryRowContext(ctx, query, args...)
}

// query runs a query on the read pool.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st, ok := s.rstmts[query]; ok {
		return st.QueryContext(ctx, args...)
	}
	return s.r.QueryContext(ctx, query, args...)
}
