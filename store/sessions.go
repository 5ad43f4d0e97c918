package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Role is who wrote a message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
	RoleTool      Role = "tool"
)

// Valid reports whether r is one of the four roles.
func (r Role) Valid() bool {
	return r == RoleUser || r == RoleAssistant || r == RoleSystem || r == RoleTool
}

// Session is one agent conversation.
type Session struct {
	ID       string `json:"id"`
	Title    string `json:"title,omitempty"`
	ParentID string `json:"parent_id,omitempty"`
	// MessageCount is how many messages the session holds now (after
	// compaction, the summary counts as one).
	MessageCount int64 `json:"message_count"`
	// LastSeq is the highest sequence number ever given to a message of
	// this session; the next append starts at LastSeq+1.
	LastSeq  int64        `json:"last_seq"`
	Summary  SummaryState `json:"summary"`
	Revision int64        `json:"revision"`
	// CreatedAt and UpdatedAt are in UTC, to the millisecond.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SummaryState says whether and when a session was compacted.
type SummaryState struct {
	// Compactions counts the compactions that succeeded.
	Compactions int64 `json:"compactions"`
	// ArchiveID is the archive (attempt) of the last successful
	// compaction, empty when there was none.
	ArchiveID   string    `json:"archive_id,omitempty"`
	CompactedAt time.Time `json:"compacted_at,omitzero"`
}

// Message is one turn of a session.
type Message struct {
	SessionID string `json:"session_id"`
	// ID is unique within its session.
	ID string `json:"id"`
	// Seq orders the messages of a session: appends take increasing
	// numbers, never reused except by the summary that replaces compacted
	// messages (it takes the last compacted message's number).
	Seq  int64 `json:"seq"`
	Role Role  `json:"role"`
	// Parts is a JSON array of objects, each with a "type": "text",
	// "tool_call" or "tool_result".
	Parts json.RawMessage `json:"parts"`
	// Metadata is a JSON object ({} when empty).
	Metadata  json.RawMessage `json:"metadata"`
	CreatedAt time.Time       `json:"created_at"`
}

// ArchiveStatus is where a compaction attempt is.
type ArchiveStatus string

const (
	// ArchivePrepared: the old state is frozen and the attempt has not
	// settled. Unresolved: never deleted by retention.
	ArchivePrepared ArchiveStatus = "prepared"
	// ArchiveSucceeded: the attempt replaced the session's state.
	ArchiveSucceeded ArchiveStatus = "succeeded"
	// ArchiveFailed: the attempt failed or was cancelled; the session's
	// state is unchanged.
	ArchiveFailed ArchiveStatus = "failed"
	// ArchiveInterrupted: the attempt was abandoned (its process died)
	// and a later attempt settled it; the session's state is unchanged.
	ArchiveInterrupted ArchiveStatus = "interrupted"
)

// Archive is one compaction attempt with the complete state of the session
// before it, frozen when the attempt was prepared and never rewritten: only
// its status, error and settled time change.
type Archive struct {
	ID        string        `json:"id"`
	SessionID string        `json:"session_id"`
	Status    ArchiveStatus `json:"status"`
	// CutSeq: the attempt compacts the messages with Seq <= CutSeq.
	CutSeq int64 `json:"cut_seq"`
	// MessageCount is the number of messages frozen in State.
	MessageCount int64 `json:"message_count"`
	// Digest is the hex SHA-256 of State.
	Digest string `json:"digest"`
	// State is the frozen ArchiveState as JSON; listings leave it empty.
	State     json.RawMessage `json:"state,omitempty"`
	Error     string          `json:"error,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	SettledAt time.Time       `json:"settled_at,omitzero"`
}

// ArchiveState is what an archive freezes: the session record, every one
// of its messages, and the full summary its memory file held then.
type ArchiveState struct {
	Session  Session   `json:"session"`
	Messages []Message `json:"messages"`
	Memory   string    `json:"memory,omitempty"`
}

// Complete reports whether an archive counts towards retention: it is
// settled (not prepared).
func (a *Archive) Complete() bool { return a.Status != ArchivePrepared }

// Decode checks that the archive's frozen state is intact (its digest
// matches and it parses) and consistent with the archive record, and
// returns it. State must be loaded (GetArchive).
func (a *Archive) Decode() (*ArchiveState, error) {
	sum := sha256.Sum256(a.State)
	if hex.EncodeToString(sum[:]) != a.Digest {
		return nil, fmt.Errorf("check archive %s: digest mismatch", a.ID)
	}
	var st ArchiveState
	if err := json.Unmarshal(a.State, &st); err != nil {
		return nil, fmt.Errorf("check archive %s: %w", a.ID, err)
	}
	switch {
	case st.Session.ID != a.SessionID:
		return nil, fmt.Errorf("check archive %s: it holds session %q, not %q", a.ID, st.Session.ID, a.SessionID)
	case int64(len(st.Messages)) != a.MessageCount || st.Session.MessageCount != a.MessageCount:
		return nil, fmt.Errorf("check archive %s: %d messages frozen, record says %d, session says %d", a.ID, len(st.Messages), a.MessageCount, st.Session.MessageCount)
	}
	var prev int64
	for _, m := range st.Messages {
		if m.SessionID != a.SessionID || m.Seq <= prev {
			return nil, fmt.Errorf("check archive %s: message %s out of place", a.ID, m.ID)
		}
		prev = m.Seq
	}
	return &st, nil
}

// DigestState returns the hex SHA-256 that Archive.Digest holds for state.
func DigestState(state []byte) string {
	sum := sha256.Sum256(state)
	return hex.EncodeToString(sum[:])
}

// ListSessionsParams pages through sessions, newest first.
type ListSessionsParams struct {
	// After continues a listing: the NextCursor of the previous page.
	After SessionCursor
	// Limit caps the page (at least 1).
	Limit int
}

// SessionCursor is a position in the newest-first list of sessions.
type SessionCursor struct {
	CreatedAt time.Time
	ID        string
}

// IsZero reports whether c is the start of the list.
func (c SessionCursor) IsZero() bool { return c.ID == "" }

// ListMessagesParams pages through a session's messages in order.
type ListMessagesParams struct {
	SessionID string
	// AfterSeq returns messages with Seq > AfterSeq.
	AfterSeq int64
	// Limit caps the page (at least 1).
	Limit int
}

// PrepareCompactionParams starts a compaction attempt (T1).
type PrepareCompactionParams struct {
	SessionID string
	ArchiveID string // the attempt's id: new, unique
	// KeepLast is how many of the newest messages stay after the summary.
	KeepLast int
	// Memory is the full summary the session's memory file holds now; it
	// is frozen with the rest of the old state.
	Memory string
	// MaxArchives: see Retention.
	MaxArchives int
	Now         time.Time // the write's time; zero: the current time
}

// CommitCompactionParams settles an attempt by replacing the session's
// state (T2).
type CommitCompactionParams struct {
	SessionID string
	ArchiveID string
	// Summary replaces the compacted messages; it takes their last
	// sequence number. Role, Parts and Metadata are used; ID is generated
	// when empty; the rest is filled in.
	Summary     *Message
	MaxArchives int
	Now         time.Time // the write's time; zero: the current time
}

// FailCompactionParams settles an attempt as failed.
type FailCompactionParams struct {
	SessionID   string
	ArchiveID   string
	Reason      string
	MaxArchives int
	Now         time.Time // the write's time; zero: the current time
}

// CompactionResult is what a compaction step did.
type CompactionResult struct {
	Session *Session `json:"session"`
	// Archive is the attempt after the step (without State).
	Archive *Archive `json:"archive"`
	// Interrupted lists abandoned prepared attempts this step settled as
	// interrupted.
	Interrupted []string `json:"interrupted,omitempty"`
	// Pruned lists the archives retention deleted.
	Pruned []string `json:"pruned,omitempty"`
	// Compacted is how many messages T2 replaced.
	Compacted int64 `json:"compacted,omitempty"`
}

// NothingToCompactError refuses a compaction that would remove nothing.
type NothingToCompactError struct {
	SessionID string
	Messages  int64
	KeepLast  int
}

func (e *NothingToCompactError) Error() string {
	return fmt.Sprintf("nothing to compact: session %s has %d message(s) and %d are kept", e.SessionID, e.Messages, e.KeepLast)
}

// AttemptSettledError refuses to settle a compaction attempt that is no
// longer prepared (another process settled it as interrupted).
type AttemptSettledError struct {
	ArchiveID string
	Status    ArchiveStatus
}

func (e *AttemptSettledError) Error() string {
	return fmt.Sprintf("compaction attempt %s is already %s", e.ArchiveID, e.Status)
}

// SessionStore keeps sessions, their messages and compaction archives.
//
// Every method is safe for concurrent use, from many goroutines and, for a
// persistent backend, many processes. Lookups of a missing session or
// archive return an error wrapping ErrNotFound (a *NotFoundError with Kind
// "session" or "archive"). The store checks existence, uniqueness and
// roles; content rules (sizes, part types, id syntax) belong to package
// sessions.
//
// Retention: steps that settle or start an attempt take MaxArchives, the
// number of complete archives to keep per session, newest first, the
// current attempt counted among them and always kept; prepared attempts
// are never deleted; 0 or less keeps everything. It runs in the same
// transaction, so the target holds after every step.
type SessionStore interface {
	// CreateSession stores s when no session has its id and returns true;
	// otherwise it leaves the stored session unchanged and returns false.
	// Either way s is filled with the stored record. A ParentID must name
	// an existing session. A new session is created at s.CreatedAt (zero:
	// the current time).
	CreateSession(ctx context.Context, s *Session) (created bool, err error)
	// GetSession returns a session.
	GetSession(ctx context.Context, id string) (*Session, error)
	// ListSessions returns a page of sessions, newest first (by creation,
	// then id), and the cursor of the next page (zero at the end).
	ListSessions(ctx context.Context, p ListSessionsParams) ([]*Session, SessionCursor, error)
	// DeleteSession removes a session with its messages and archives.
	DeleteSession(ctx context.Context, id string) error

	// AppendMessages adds msgs to the end of a session in one atomic
	// operation whose cost does not depend on the session's size. It
	// fills each message's SessionID, Seq, CreatedAt and (when empty) ID,
	// and returns the session after the append. The append's time, every
	// message's CreatedAt and the session's UpdatedAt, is AppendTime(msgs). A message id already used
	// in the session refuses the whole append (ErrExists). Filled values
	// are valid only when the error is nil.
	AppendMessages(ctx context.Context, sessionID string, msgs []*Message) (*Session, error)
	// ListMessages returns up to p.Limit messages with Seq > p.AfterSeq,
	// in order. An unknown session is an error.
	ListMessages(ctx context.Context, p ListMessagesParams) ([]*Message, error)

	// PrepareCompaction (T1) settles the session's abandoned prepared
	// attempts as interrupted, then freezes the complete current state in
	// a new prepared archive whose CutSeq leaves p.KeepLast messages.
	// With nothing to compact it returns *NothingToCompactError.
	PrepareCompaction(ctx context.Context, p PrepareCompactionParams) (*CompactionResult, error)
	// CommitCompaction (T2) atomically deletes the messages with Seq <=
	// CutSeq, inserts the summary at CutSeq, records the summary state and
	// marks the attempt succeeded. An attempt that is no longer prepared
	// is refused with *AttemptSettledError and nothing changes.
	CommitCompaction(ctx context.Context, p CommitCompactionParams) (*CompactionResult, error)
	// FailCompaction marks a prepared attempt failed with a reason.
	FailCompaction(ctx context.Context, p FailCompactionParams) (*CompactionResult, error)
	// ListArchives returns a session's archives, newest first, without
	// their State.
	ListArchives(ctx context.Context, sessionID string) ([]*Archive, error)
	// GetArchive returns one archive with its State.
	GetArchive(ctx context.Context, id string) (*Archive, error)
}

// AppendTime is the time of an append of msgs: the latest CreatedAt they
// carry, or the current time when none does; in UTC, to the millisecond.
func AppendTime(msgs []*Message) time.Time {
	var t time.Time
	for _, m := range msgs {
		if m.CreatedAt.After(t) {
			t = m.CreatedAt
		}
	}
	return Millis(At(t))
}

// CheckAppend refuses an append of no messages, or of one with an unknown
// role, before a backend writes anything.
func CheckAppend(sessionID string, msgs []*Message) error {
	if len(msgs) == 0 {
		return fmt.Errorf("append to session %s: no messages", sessionID)
	}
	for i, m := range msgs {
		if !m.Role.Valid() {
			return fmt.Errorf("append to session %s: message %d: unknown role %q", sessionID, i, m.Role)
		}
	}
	return nil
}
