package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/workspace"
)

// EnvDatabaseURL selects a PostgreSQL store shared by several machines,
// as store.url does; it wins over store.url, so that each machine can say
// where its database is (and keep a password) out of the config file the
// machines share.
const EnvDatabaseURL = "CAIRN_DATABASE_URL"

// SharedStore is a PostgreSQL store shared by several machines: where it
// is and the workspace's identity there.
type SharedStore struct {
	URL         string
	WorkspaceID string
	// FromEnv says the URL came from CAIRN_DATABASE_URL.
	FromEnv bool
}

// Shared returns the shared store the settings and CAIRN_DATABASE_URL
// select, nil when the store is the workspace's SQLite file. A URL
// without workspace_id, or one pgx cannot parse, is an error that says
// what to write; it never shows the URL's password.
func (s Settings) Shared() (*SharedStore, error) {
	sh := &SharedStore{URL: s.Store.URL, WorkspaceID: s.WorkspaceID}
	if env := strings.TrimSpace(os.Getenv(EnvDatabaseURL)); env != "" {
		sh.URL, sh.FromEnv = env, true
	}
	if sh.URL == "" {
		return nil, nil
	}
	if err := sh.check(); err != nil {
		return nil, err
	}
	return sh, nil
}

func (sh *SharedStore) source() string {
	if sh.FromEnv {
		return EnvDatabaseURL
	}
	return "store.url"
}

// check validates the URL and the workspace id.
func (sh *SharedStore) check() error {
	if err := checkDatabaseURL(sh.source(), sh.URL); err != nil {
		return err
	}
	if sh.WorkspaceID == "" {
		return fmt.Errorf("%s selects PostgreSQL, which needs workspace_id in .cairn/config.yaml: the workspace's name on every machine (for example workspace_id: %s)",
			sh.source(), suggestWorkspaceID())
	}
	return checkWorkspaceID(sh.WorkspaceID)
}

// checkShared validates workspace_id and store.url as the config file
// gives them (CAIRN_DATABASE_URL is checked when Shared reads it).
func (s Settings) checkShared() error {
	if s.WorkspaceID != "" {
		if err := checkWorkspaceID(s.WorkspaceID); err != nil {
			return err
		}
	}
	if s.Store.URL != "" {
		return checkDatabaseURL("store.url", s.Store.URL)
	}
	return nil
}

// checkDatabaseURL refuses a URL that is not PostgreSQL's or that pgx
// cannot parse; the error never shows its password.
func checkDatabaseURL(source, u string) error {
	const how = "write postgres://USER:PASSWORD@HOST:5432/DATABASE (sslmode and other parameters after ?), or key=value pairs"
	if scheme, _, ok := strings.Cut(u, "://"); ok && scheme != "postgres" && scheme != "postgresql" {
		return fmt.Errorf("%s: %q is not a PostgreSQL URL: %s", source, scheme+"://…", how)
	}
	if _, err := pgxpool.ParseConfig(u); err != nil {
		return fmt.Errorf("%s: cannot parse the database URL (%s): %s", source, redactIn(err.Error(), u), how)
	}
	return nil
}

// checkWorkspaceID refuses a workspace_id that cannot name a schema and
// a state folder.
func checkWorkspaceID(id string) error {
	if _, err := postgres.SchemaName(id); err != nil {
		return fmt.Errorf("workspace_id: %w", err)
	}
	return nil
}

// suggestWorkspaceID is an example workspace_id: the workspace folder's
// name, cleaned, in errors.
func suggestWorkspaceID() string {
	wd, _ := os.Getwd()
	name := strings.ToLower(filepath.Base(wd))
	name = notIDChars.ReplaceAllString(name, "-")
	name = strings.Trim(name, "-_")
	if name == "" || checkWorkspaceID(name) != nil {
		return "my-project"
	}
	return name
}

var notIDChars = regexp.MustCompile(`[^a-z0-9_-]+`)

// Describe names the database without its password:
// "postgres USER@HOST:PORT/DATABASE".
func (sh *SharedStore) Describe() string {
	pc, err := pgxpool.ParseConfig(sh.URL)
	if err != nil {
		return "postgres (unparsable URL)"
	}
	c := pc.ConnConfig
	return fmt.Sprintf("postgres %s@%s/%s", c.User, hostPort(c.Host, c.Port), c.Database)
}

func hostPort(host string, port uint16) string {
	if strings.HasPrefix(host, "/") { // a Unix socket folder
		return host
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(int(port))
}

// redact replaces the URL's password in s with xxxxx.
func (sh *SharedStore) redact(s string) string { return redactIn(s, sh.URL) }

// redactIn replaces the password of database URL u, wherever it appears
// in s, with xxxxx.
func redactIn(s, u string) string {
	for _, pw := range passwordsOf(u) {
		if pw != "" {
			s = strings.ReplaceAll(s, pw, "xxxxx")
		}
	}
	return s
}

// passwordsOf returns the password written in u, as written and
// decoded: the userinfo of a URL (even one url.Parse refuses), a
// password query parameter, or a key=value pair.
func passwordsOf(u string) []string {
	var out []string
	if _, rest, ok := strings.Cut(u, "://"); ok {
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
				out = append(out, pw)
				if dec, err := url.PathUnescape(pw); err == nil {
					out = append(out, dec)
				}
			}
		}
		if p, err := url.Parse(u); err == nil {
			out = append(out, p.Query().Get("password"))
		}
	}
	for _, m := range passwordPair.FindAllStringSubmatch(u, -1) {
		out = append(out, strings.Trim(m[1], "'"))
	}
	return out
}

// passwordPair is a password in key=value form.
var passwordPair = regexp.MustCompile(`password\s*=\s*('(?:[^'\\]|\\.)*'|[^\s&]+)`)

// RedactError wraps err with its text redacted: the URL's password never
// shows.
func (sh *SharedStore) RedactError(err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{msg: sh.redact(err.Error()), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// useWorkspaceID names the workspace by its workspace_id: its state
// folder becomes <root>/<workspace_id> on every machine, whatever the
// workspace's path there.
func useWorkspaceID(ws *workspace.Workspace, s Settings, stateRoot string) {
	if s.WorkspaceID != "" {
		ws.ID, ws.StateDir = s.WorkspaceID, filepath.Join(stateRoot, s.WorkspaceID)
	}
}

// ResolveWorkspace is workspace.Resolve with the workspace's config read:
// a workspace_id names its state folder. Commands that need the state
// folder without opening a host use it.
func ResolveWorkspace(dir, explicit, stateRoot string) (*workspace.Workspace, error) {
	ws, err := workspace.Resolve(dir, explicit, stateRoot)
	if err != nil {
		return nil, err
	}
	s, err := LoadSettings(ws)
	if err != nil {
		return nil, err
	}
	useWorkspaceID(ws, s, stateRoot)
	return ws, nil
}

// openShared opens the PostgreSQL store sh names. The state folder on
// this machine (locks, step files, worker.log, secrets) is prepared only
// for a caller that writes, as for SQLite.
func (h *Host) openShared(ctx context.Context, cfg Config, now time.Time, sh *SharedStore) error {
	ws := h.Workspace
	if cfg.Write {
		if err := ws.Prepare(); err != nil {
			return err
		}
		if err := ws.Touch(now); err != nil {
			return err
		}
	}
	st, err := postgres.Open(ctx, postgres.Config{URL: sh.URL, WorkspaceID: sh.WorkspaceID, Logger: h.log})
	if err != nil {
		return sh.RedactError(fmt.Errorf("open the shared store (%s, from %s): %w", sh.Describe(), sh.source(), err))
	}
	h.Store, h.shared = st, sh
	src, _ := json.Marshal(sh) // strings only: cannot fail
	h.stepRef = runs.StoreRef{Kind: "postgres", Source: string(src)}
	return nil
}

// A leases-mode step supervisor of a shared store opens it from its
// SharedStore as JSON (h.stepRef, on the supervisor's standard input); a
// small pool does, as it only renews a lease, reads a cancel and records
// its step state.
func init() {
	runs.RegisterStoreOpener("postgres", func(ctx context.Context, src string) (runs.StepStore, error) {
		var sh SharedStore
		if err := json.Unmarshal([]byte(src), &sh); err != nil {
			return nil, fmt.Errorf("open shared store: decode its reference: %w", err)
		}
		st, err := postgres.Open(ctx, postgres.Config{URL: sh.URL, WorkspaceID: sh.WorkspaceID, MaxConns: 2})
		if err != nil {
			return nil, sh.RedactError(err)
		}
		return st, nil
	})
}

// shareRuns points the run engine at the shared store's journals, and is
// the one place that tells the engine its store is shared: lease
// coordination (branch pgcoord) is chosen here when it is merged.
func (h *Host) shareRuns(o *runs.Options) {
	if h.shared == nil {
		return
	}
	o.Journals = store.Journals(h.Store)
	o.JournalDatabase = &runs.JournalDatabase{URL: h.shared.URL, WorkspaceID: h.shared.WorkspaceID}
}

// memoryFiles is where sessions keep memory files besides memory/: the
// shared store, or nil.
func (h *Host) memoryFiles() store.MemoryFileStore {
	if h.shared == nil {
		return nil
	}
	return store.MemoryFiles(h.Store)
}

// StoreDescription names the host's store for status: "sqlite PATH",
// "postgres USER@HOST:PORT/DATABASE (workspace ID)" (never a password),
// or "memory".
func (h *Host) StoreDescription() string {
	switch {
	case h.shared != nil:
		return h.shared.Describe() + " (workspace " + h.shared.WorkspaceID + ")"
	case h.InMemory():
		return "memory"
	}
	return "sqlite " + h.Workspace.DBPath()
}
