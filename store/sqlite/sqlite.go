// Package sqlite is the default store backend: one SQLite database per
// workspace (state.sqlite3, WAL mode) through modernc.org/sqlite.
//
// Writes go through one writer goroutine that owns the single write
// connection and commits many small operations in one transaction (group
// commit), each inside its own savepoint so that one failing operation
// does not fail the others. Every transaction starts with BEGIN IMMEDIATE
// and commits with synchronous=FULL unless told otherwise. Reads use a
// separate, bounded pool of query-only connections.
//
// Open refuses, without changing them, a symlinked database, a file that is
// not SQLite and a SQLite database that is not Cairn's.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/store"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

var _ store.Store = (*Store)(nil)

// ApplicationID marks a database as Cairn's ("CARN").
const ApplicationID = 0x4341524E

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Options tune a store. The zero value is the safe default.
type Options struct {
	// Synchronous is the SQLite synchronous setting: "FULL" (default) or
	// "NORMAL" (faster; a power loss may lose the last commits, never
	// corrupt the database).
	Synchronous string
	// ReadOnly opens an existing database for reading only: no migrations,
	// no writes, nothing created.
	ReadOnly bool
	// MaxBatch caps how many operations one transaction commits (default 256).
	MaxBatch int
	// Readers is the size of the read connection pool (default 4).
	Readers int
	// BusyTimeout is SQLite's busy wait of each read connection (default
	// 10s); the writer polls instead (see busy.go).
	BusyTimeout time.Duration
	// WriteWait is how long a write keeps waiting for another process's
	// write lock (store.busy_timeout; default DefaultWriteWait), saying so
	// in the log meanwhile.
	WriteWait time.Duration
	// Logger receives the store's warnings (waits, paused writes); nil:
	// discard.
	Logger *slog.Logger
	// Clock paces the trial writes of a paused store and the checks of
	// its file; nil: the wall clock.
	Clock clock.Clock
}

// Store is a SQLite-backed store.Store.
type Store struct {
	path string
	opts Options
	w    *sql.DB // the one write connection, owned by the writer goroutine
	r    *sql.DB // query-only readers

	stmtCache // statements prepared on first use; see stmt.go

	mu      sync.RWMutex // guards closing against senders on reqs
	closing bool
	reqs    chan *writeReq
	done    chan struct{}

	log     *slog.Logger
	clk     clock.Clock
	id      fileID          // the database file opened (see checkFile)
	health  health          // whether writes are accepted now
	pending map[string]bool // operation ids told Unknown, not resolved yet; writer goroutine only

	watchStop, watchDone chan struct{} // the file watcher (see watchFile)

	// afterRetry, when set by a test, is called by the writer goroutine
	// after each trial to resume writing.
	afterRetry func()

	states stateMemo // automation states by their JSON text (see statememo.go)

	counters writerCounters // see WriterStats

	// AfterCommit, when set before any write, is called by the writer
	// goroutine after each commit attempt; tests use it as a signal.
	afterCommit func()
}

// NotOursError refuses a file that is not a Cairn database.
type NotOursError struct {
	Path   string
	Reason string
}

func (e *NotOursError) Error() string {
	return fmt.Sprintf("%s is not a Cairn state database (%s); it was left untouched: move it aside or point --state at another folder", e.Path, e.Reason)
}

// SymlinkError refuses a database path that is a symbolic link.
type SymlinkError struct{ Path string }

func (e *SymlinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link; Cairn refuses a linked database (a link can split SQLite's locks): link or mount the folder instead", e.Path)
}

// Open opens (creating if needed, with mode 0600) the database at path.
func Open(ctx context.Context, dbPath string, opts Options) (*Store, error) {
	opts = withDefaults(opts)
	fi, err := os.Lstat(dbPath)
	exists := err == nil
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("open store %s: %w", dbPath, err)
	case exists && fi.Mode()&fs.ModeSymlink != 0:
		return nil, &SymlinkError{Path: dbPath}
	case exists && !fi.Mode().IsRegular():
		return nil, &NotOursError{Path: dbPath, Reason: "not a regular file"}
	case !exists && opts.ReadOnly:
		return nil, fmt.Errorf("open store %s: %w", dbPath, fs.ErrNotExist)
	}
	current := false // the schema is up to date: no write transaction needed
	if exists && fi.Size() > 0 {
		if current, err = checkOurs(ctx, dbPath, opts); err != nil {
			return nil, err
		}
	} else if !exists {
		// Create the file ourselves so it is 0600 whatever the umask;
		// SQLite gives the -wal and -shm files the same mode.
		f, err := os.OpenFile(dbPath, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create store %s: %w", dbPath, err)
		}
		if f != nil {
			f.Close()
		}
	}

	s := &Store{path: dbPath, opts: opts, log: opts.Logger, clk: clock.OrReal(opts.Clock)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.r, err = sql.Open("sqlite", dsn(dbPath, opts, false)); err != nil {
		return nil, fmt.Errorf("open store %s: %w", dbPath, err)
	}
	s.r.SetMaxOpenConns(opts.Readers)
	s.r.SetMaxIdleConns(opts.Readers)
	if opts.ReadOnly {
		if err := s.r.PingContext(ctx); err != nil {
			s.r.Close()
			return nil, fmt.Errorf("open store %s: %w", dbPath, err)
		}
		return s, nil
	}
	if s.w, err = s.openWriter(); err != nil {
		s.r.Close()
		return nil, err
	}
	if !current {
		if err := s.migrate(ctx); err != nil {
			s.w.Close()
			s.r.Close()
			return nil, err
		}
	}
	if s.id, err = statFile(dbPath); err != nil {
		s.w.Close()
		s.r.Close()
		return nil, fmt.Errorf("open store %s: %w", dbPath, err)
	}
	s.reqs = make(chan *writeReq, opts.MaxBatch)
	s.done = make(chan struct{})
	s.watchStop, s.watchDone = make(chan struct{}), make(chan struct{})
	go s.writer()
	go s.watchFile(s.watchStop, s.watchDone)
	return s, nil
}

func withDefaults(o Options) Options {
	if o.Synchronous == "" {
		o.Synchronous = "FULL"
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 10 * time.Second
	}
	if o.WriteWait <= 0 {
		o.WriteWait = DefaultWriteWait
	}
	return o
}

func dsn(p string, o Options, write bool) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
	busy := o.BusyTimeout
	if write {
		busy = min(busy, writeBusySlice) // begin polls for the rest, logging
	}
	q := []string{
		"_pragma=busy_timeout(" + strconv.Itoa(int(busy/time.Millisecond)) + ")",
		"_pragma=foreign_keys(1)",
	}
	switch {
	case o.ReadOnly:
		q = append(q, "mode=ro")
	case write:
		// auto_vacuum comes before the journal mode, which writes the
		// header: a new database starts with incremental vacuum; an older
		// one switches at its next VACUUM (see ReclaimSpace).
		q = append(q, "_pragma=auto_vacuum(INCREMENTAL)", "_pragma=journal_mode(WAL)", "_pragma=synchronous("+o.Synchronous+")", "_txlock=immediate")
	default:
		q = append(q, "_pragma=query_only(1)")
	}
	return "file:" + esc + "?" + strings.Join(q, "&")
}

// checkOurs looks at an existing database through a read-only connection,
// so a foreign file is never written to, not even to switch it to WAL.
// current reports a schema that needs no migration: opening then takes no
// write lock, so it works while another process is stuck in a write.
func checkOurs(ctx context.Context, p string, o Options) (current bool, err error) {
	ro := o
	ro.ReadOnly = true
	db, err := sql.Open("sqlite", dsn(p, ro, false))
	if err != nil {
		return false, fmt.Errorf("open store %s: %w", p, err)
	}
	defer db.Close()
	var appID, version, tables int
	err = db.QueryRowContext(ctx, "SELECT (SELECT application_id FROM pragma_application_id), (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)").Scan(&appID, &version, &tables)
	if err != nil {
		if strings.Contains(err.Error(), "not a database") {
			return false, &NotOursError{Path: p, Reason: "not an SQLite file"}
		}
		return false, fmt.Errorf("inspect store %s: %w", p, err)
	}
	switch {
	case appID == ApplicationID:
		if max := len(migrationNames()); version > max {
			return false, fmt.Errorf("open store %s: schema version %d is newer than this mcp-host knows (%d); upgrade mcp-host", p, version, max)
		}
		return version == len(migrationNames()), nil
	case appID == 0 && tables == 0:
		return false, nil // an empty SQLite file: ours to initialise
	case appID == 0:
		return false, &NotOursError{Path: p, Reason: fmt.Sprintf("an SQLite database with %d schema objects and no Cairn application id", tables)}
	default:
		return false, &NotOursError{Path: p, Reason: fmt.Sprintf("application id %#x", appID)}
	}
}

func migrationNames() []string {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		panic(err) // embedded at build time
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// migrate brings the schema up to date in one immediate transaction, so
// two processes opening a new database at once cannot both apply it; it
// reads the version again inside, as another process may have migrated.
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate store %s: %w", s.path, err)
	}
	defer tx.Rollback()
	var appID, version int
	if err := tx.QueryRowContext(ctx, "SELECT (SELECT application_id FROM pragma_application_id), (SELECT user_version FROM pragma_user_version)").Scan(&appID, &version); err != nil {
		return fmt.Errorf("migrate store %s: %w", s.path, err)
	}
	names := migrationNames()
	if appID != 0 && appID != ApplicationID {
		return &NotOursError{Path: s.path, Reason: fmt.Sprintf("application id %#x", appID)}
	}
	if version > len(names) {
		return fmt.Errorf("open store %s: schema version %d is newer than this mcp-host knows (%d); upgrade mcp-host", s.path, version, len(names))
	}
	if version == len(names) && appID == ApplicationID {
		return nil
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", ApplicationID)); err != nil {
		return fmt.Errorf("migrate store %s: %w", s.path, err)
	}
	for i := version; i < len(names); i++ {
		body, err := migrationFiles.ReadFile(path.Join("migrations", names[i]))
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			return fmt.Errorf("migrate store %s: apply %s: %w", s.path, names[i], err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(names))); err != nil {
		return fmt.Errorf("migrate store %s: %w", s.path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate store %s: %w", s.path, err)
	}
	return nil
}

var qOperation = prepared("SELECT 1 FROM operations WHERE id = ?")

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Outcome reports whether operation opID committed.
func (s *Store) Outcome(ctx context.Context, opID string) (store.Outcome, error) {
	var one int
	err := s.queryRow(ctx, qOperation, opID).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.NotCommitted, nil
	case err != nil:
		return store.Unknown, fmt.Errorf("look up operation %s: %w", opID, err)
	}
	return store.Committed, nil
}

// Counts counts runs, automations and sessions, tolerating tables that an
// older schema does not have yet.
func (s *Store) Counts(ctx context.Context) (store.Counts, error) {
	var c store.Counts
	for _, t := range []struct {
		table string
		n     *int
	}{{"runs", &c.Runs}, {"automations", &c.Automations}, {"sessions", &c.Sessions}} {
		var exists int
		if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", t.table).Scan(&exists); err != nil {
			return c, fmt.Errorf("count %s: %w", t.table, err)
		}
		if exists == 0 {
			continue
		}
		if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM "+t.table).Scan(t.n); err != nil {
			return c, fmt.Errorf("count %s: %w", t.table, err)
		}
	}
	return c, nil
}

// IntegrityCheck runs PRAGMA integrity_check and returns its findings, or
// nil when the database is sound.
func (s *Store) IntegrityCheck(ctx context.Context) error {
	rows, err := s.r.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("check integrity of %s: %w", s.path, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return err
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("integrity check of %s: %s", s.path, strings.Join(problems, "; "))
	}
	return nil
}

// Reader returns the query-only connection pool, for backend code and tests.
func (s *Store) Reader() *sql.DB { return s.r }

// Close waits for writes in flight, then closes the connections.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	if s.reqs != nil {
		close(s.reqs)
	}
	s.mu.Unlock()
	if s.done != nil {
		<-s.done
		close(s.watchStop)
		<-s.watchDone
	}
	s.closeStatements()
	var errs []error
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	errs = append(errs, s.r.Close())
	return errors.Join(errs...)
}
