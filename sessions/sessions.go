package sessions

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// Limits and defaults.
const (
	// MaxMessageBytes caps one message: its parts and metadata as JSON.
	MaxMessageBytes = 1 << 20
	// MaxAppendBytes caps one append, all messages together.
	MaxAppendBytes = 4 << 20
	// MaxAppendMessages caps how many messages one append carries.
	MaxAppendMessages = 1000
	// MaxTitleBytes caps a session title.
	MaxTitleBytes = 1024
	// DefaultPageLimit and MaxPageLimit bound a page of messages or
	// sessions; MaxPageBytes ends a page of messages early (it always
	// holds at least one message).
	DefaultPageLimit = 100
	MaxPageLimit     = 1000
	MaxPageBytes     = 8 << 20
	// DefaultKeepLast is how many messages a compaction keeps by default.
	DefaultKeepLast = 4
	// DefaultMaxArchives is the default retention target per session.
	DefaultMaxArchives = 5
	// MaxPreviewBytes caps the summary message that replaces compacted
	// messages, pointer and truncation marker included.
	MaxPreviewBytes = 32 << 10
	// DefaultLockTimeout is how long Compact and Delete wait for another
	// process working on the same session.
	DefaultLockTimeout = 10 * time.Second
)

// Options configure a Manager.
type Options struct {
	// MemoryDir holds memory/<session-id>.md. Empty: no memory files are
	// written (dry runs); previews then say so.
	MemoryDir string
	// MemoryFiles, when set, keeps the memory files in the store too
	// (shared by several machines): the host that reads one writes it
	// out to MemoryDir (see memory_shared.go).
	MemoryFiles store.MemoryFileStore
	// LocksDir holds the per-session lock files that keep compactions and
	// deletes of one session apart across processes. Empty: they are kept
	// apart within this process only (dry runs, tests).
	LocksDir string
	// MaxArchives is the retention target (config sessions.max_archives):
	// complete archives kept per session. nil means DefaultMaxArchives;
	// 0 disables cleanup.
	MaxArchives *int
	// LockTimeout bounds the wait for a session's lock (default
	// DefaultLockTimeout).
	LockTimeout time.Duration
	// Clock stamps what the Manager writes (sessions, messages,
	// compactions); nil is the wall clock.
	Clock clock.Clock
}

// Manager is the session API over a store. It is safe for concurrent use,
// and many Managers in many processes may share one store and folders.
type Manager struct {
	st   store.SessionStore
	opts Options
	clk  clock.Clock
	mu   keyedMutex
	// shared tracks memory files written out from the store.
	shared sharedMemory

	// hook, when set (tests), runs at named steps of Compact; an error
	// fails the attempt there as if that step had failed.
	hook func(step string) error
}

// New returns a Manager over st.
func New(st store.SessionStore, opts Options) *Manager {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	return &Manager{st: st, opts: opts, clk: clock.OrReal(opts.Clock)}
}

func (m *Manager) maxArchives() int {
	if m.opts.MaxArchives == nil {
		return DefaultMaxArchives
	}
	return *m.opts.MaxArchives
}

// CreateParams describe a new session.
type CreateParams struct {
	// ID is the session's id; empty generates one ("ses_...").
	ID       string `json:"session_id,omitempty"`
	Title    string `json:"title,omitempty"`
	ParentID string `json:"parent_id,omitempty"`
}

// Create stores a new session, or returns the existing one with that id,
// unchanged (created is false).
func (m *Manager) Create(ctx context.Context, p CreateParams) (s *store.Session, created bool, err error) {
	if p.ID == "" {
		p.ID = ids.New("ses")
	}
	if err := ids.Validate("session id", p.ID); err != nil {
		return nil, false, err
	}
	if p.ParentID != "" {
		if err := ids.Validate("parent session id", p.ParentID); err != nil {
			return nil, false, err
		}
	}
	switch {
	case len(p.Title) > MaxTitleBytes:
		return nil, false, &LimitError{What: "title", Size: len(p.Title), Limit: MaxTitleBytes, Per: "per session"}
	case !utf8.ValidString(p.Title) || strings.ContainsRune(p.Title, 0):
		return nil, false, invalidf("title", "must be UTF-8 text without NUL")
	}
	if s, err := m.st.GetSession(ctx, p.ID); err == nil {
		return s, false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, false, err
	}
	// A new session: under its lock, clear what a delete that crashed
	// halfway may have left in the memory folder.
	unlock, err := m.lock(ctx, p.ID)
	if err != nil {
		return nil, false, fmt.Errorf("create session %s: %w", p.ID, err)
	}
	defer unlock()
	if _, err := m.st.GetSession(ctx, p.ID); errors.Is(err, store.ErrNotFound) {
		if err := m.removeFiles(p.ID); err != nil {
			return nil, false, fmt.Errorf("create session %s: %w", p.ID, err)
		}
	}
	s = &store.Session{ID: p.ID, Title: p.Title, ParentID: p.ParentID, CreatedAt: m.clk.Now()}
	created, err = m.st.CreateSession(ctx, s)
	if err != nil {
		return nil, false, err
	}
	return s, created, nil
}

// Get returns a session.
func (m *Manager) Get(ctx context.Context, id string) (*store.Session, error) {
	if err := ids.Validate("session id", id); err != nil {
		return nil, err
	}
	return m.st.GetSession(ctx, id)
}

// ListParams page through sessions.
type ListParams struct {
	// Cursor is a page's NextCursor; empty starts at the newest.
	Cursor string `json:"cursor,omitempty"`
	// Limit caps the page: 0 means DefaultPageLimit, at most MaxPageLimit.
	Limit int `json:"limit,omitempty"`
}

// SessionPage is one page of sessions, newest first.
type SessionPage struct {
	Sessions []*store.Session `json:"sessions"`
	// NextCursor continues the listing; empty at the end.
	NextCursor string `json:"next_cursor,omitempty"`
}

// List returns sessions, newest first.
func (m *Manager) List(ctx context.Context, p ListParams) (*SessionPage, error) {
	limit, err := pageLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	after, err := decodeSessionCursor(p.Cursor)
	if err != nil {
		return nil, err
	}
	list, next, err := m.st.ListSessions(ctx, store.ListSessionsParams{After: after, Limit: limit})
	if err != nil {
		return nil, err
	}
	page := &SessionPage{Sessions: list}
	if page.Sessions == nil {
		page.Sessions = []*store.Session{}
	}
	if !next.IsZero() {
		page.NextCursor = encodeSessionCursor(next)
	}
	return page, nil
}

func pageLimit(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultPageLimit, nil
	case n < 0 || n > MaxPageLimit:
		return 0, invalidf("limit", "%d is out of range (1 to %d)", n, MaxPageLimit)
	}
	return n, nil
}

func encodeSessionCursor(c store.SessionCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.CreatedAt.UnixMilli(), 10) + ":" + c.ID))
}

func decodeSessionCursor(s string) (store.SessionCursor, error) {
	if s == "" {
		return store.SessionCursor{}, nil
	}
	bad := invalidf("cursor", "%q is not a cursor this listing returned", s)
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return store.SessionCursor{}, bad
	}
	ms, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || ids.Validate("session id", id) != nil {
		return store.SessionCursor{}, bad
	}
	return store.SessionCursor{CreatedAt: time.UnixMilli(n).UTC(), ID: id}, nil
}

// Delete removes a session with its messages, archives and memory file.
func (m *Manager) Delete(ctx context.Context, id string) error {
	if err := ids.Validate("session id", id); err != nil {
		return err
	}
	unlock, err := m.lock(ctx, id)
	if err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	defer unlock()
	// The store first: it is the truth. Files a crash leaves behind are
	// removed by the next Create of this id or by RecoverAll.
	if err := m.st.DeleteSession(ctx, id); err != nil {
		return err
	}
	if err := m.removeFiles(id); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	return nil
}

// Archives returns a session's compaction archives, newest first, without
// their frozen state.
func (m *Manager) Archives(ctx context.Context, id string) ([]*store.Archive, error) {
	if err := ids.Validate("session id", id); err != nil {
		return nil, err
	}
	return m.st.ListArchives(ctx, id)
}

// Archive returns one archive with its frozen state, checked (see
// store.Archive.Decode).
func (m *Manager) Archive(ctx context.Context, archiveID string) (*store.Archive, *store.ArchiveState, error) {
	if err := ids.Validate("archive id", archiveID); err != nil {
		return nil, nil, err
	}
	a, err := m.st.GetArchive(ctx, archiveID)
	if err != nil {
		return nil, nil, err
	}
	st, err := a.Decode()
	if err != nil {
		return nil, nil, err
	}
	return a, st, nil
}
