// Package postgres is the store backend for several machines: a
// workspace's state in a PostgreSQL database the team already runs,
// through github.com/jackc/pgx/v5 (pgxpool).
//
// One database holds many workspaces: each lives in its own schema,
// cairn_<workspace id> (see SchemaName), which Open creates and migrates;
// every connection of the store's pool has its search_path set to it.
//
// Every write is one transaction that records its operation id
// (operations table), so that a commit whose outcome is unknown (the
// connection broke during COMMIT) is resolved by looking the id up once
// the old transaction is no longer in progress; it is never retried.
// Concurrent writers are serialised by row locks: a write reads the row
// it changes FOR UPDATE, a claim FOR UPDATE SKIP LOCKED.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var _ store.Store = (*Store)(nil)
var _ store.HealthWatcher = (*Store)(nil)

// Config says which database and workspace a store opens.
type Config struct {
	// URL is the database's connection string (postgres://user@host/db
	// or key=value form), as pgx parses it.
	URL string
	// WorkspaceID names the workspace: lowercase letters, digits, '-'
	// and '_', starting with a letter or digit, at most MaxWorkspaceID
	// bytes. Its schema is SchemaName(WorkspaceID).
	WorkspaceID string
	// MaxConns bounds the pool (default 8).
	MaxConns int32
	// Logger receives the store's warnings; nil: discard.
	Logger *slog.Logger
	// Clock paces the retries that resolve an unknown commit outcome;
	// nil: the wall clock.
	Clock clock.Clock
}

// MaxWorkspaceID bounds a workspace id: PostgreSQL names are at most 63
// bytes, and the schema name adds the "cairn_" prefix.
const MaxWorkspaceID = 63 - len(schemaPrefix)

const schemaPrefix = "cairn_"

var workspaceIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// SchemaName returns the schema of workspace id: "cairn_" and the id with
// '-' mapped to '_'. An id that is not valid (see Config.WorkspaceID) is
// refused with an error that says what to change.
func SchemaName(id string) (string, error) {
	if len(id) > MaxWorkspaceID || !workspaceIDPattern.MatchString(id) {
		return "", fmt.Errorf("workspace id %q: use 1 to %d lowercase letters, digits, '-' or '_', starting with a letter or digit", id, MaxWorkspaceID)
	}
	return schemaPrefix + strings.ReplaceAll(id, "-", "_"), nil
}

// Store is a PostgreSQL-backed store.Store for one workspace.
type Store struct {
	pool   *pgxpool.Pool
	schema string
	log    *slog.Logger
	clk    clock.Clock
	health health

	closeOnce sync.Once
	stop      chan struct{} // closed by Close: ends the resolver
	resolving sync.WaitGroup

	// resolveWait bounds how long a write waits for its unknown outcome
	// (defaultResolveWait; tests shorten it).
	resolveWait time.Duration
	migrated    int // how many migrations this Open applied (for tests)

	// beforeCommit, when set by a test, is called with the transaction
	// of each write just before its COMMIT.
	beforeCommit func(tx pgx.Tx)
}

// Open connects to cfg.URL, creates the workspace's schema when it is
// missing and brings it up to date. Hosts opening at once migrate once.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	schema, err := SchemaName(cfg.WorkspaceID)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("open store: parse the database URL: %w", err)
	}
	pc.MaxConns = 8
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	// search_path is a startup parameter: every connection of the pool,
	// including those made after a reconnect, works in the schema.
	pc.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", schema, err)
	}
	s := &Store{pool: pool, schema: schema, log: cfg.Logger, clk: clock.OrReal(cfg.Clock), stop: make(chan struct{}), resolveWait: defaultResolveWait}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.health.init(time.Now())
	if err := s.migrate(ctx, cfg.WorkspaceID); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Schema returns the workspace's schema name.
func (s *Store) Schema() string { return s.schema }

// Pool returns the connection pool, for backend code and tests.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Outcome reports whether operation opID committed.
func (s *Store) Outcome(ctx context.Context, opID string) (store.Outcome, error) {
	if s.health.isPending(opID) {
		return store.Unknown, nil
	}
	return s.lookUpOp(ctx, opID)
}

func (s *Store) lookUpOp(ctx context.Context, opID string) (store.Outcome, error) {
	var one int
	err := s.pool.QueryRow(ctx, "SELECT 1 FROM operations WHERE id = $1", opID).Scan(&one)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.NotCommitted, nil
	case err != nil:
		return store.Unknown, fmt.Errorf("look up operation %s: %w", opID, err)
	}
	return store.Committed, nil
}

// Counts counts runs, automations and sessions, tolerating tables that
// are not in the schema yet (a binary without those migrations).
func (s *Store) Counts(ctx context.Context) (store.Counts, error) {
	var c store.Counts
	for _, t := range []struct {
		table string
		n     *int
	}{{"runs", &c.Runs}, {"automations", &c.Automations}, {"sessions", &c.Sessions}} {
		var exists bool
		if err := s.pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", t.table).Scan(&exists); err != nil {
			return c, fmt.Errorf("count %s: %w", t.table, err)
		}
		if !exists {
			continue
		}
		if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM "+t.table).Scan(t.n); err != nil {
			return c, fmt.Errorf("count %s: %w", t.table, err)
		}
	}
	return c, nil
}

// Close waits for writes in flight and closes the pool.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.health.close()
		close(s.stop)
		s.resolving.Wait()
		s.pool.Close()
	})
	return nil
}
