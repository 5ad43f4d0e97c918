package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

type sessionsData struct {
	byID     map[string]*sessionEntry
	archives map[string]*archiveEntry
	archN    int64 // creation order of archives
}

type sessionEntry struct {
	s        store.Session
	msgs     []*store.Message // ordered by seq
	msgIDs   map[string]bool
	archives []*archiveEntry // creation order
}

type archiveEntry struct {
	a store.Archive
	n int64
}

func (d *sessionsData) init() {
	d.byID = make(map[string]*sessionEntry)
	d.archives = make(map[string]*archiveEntry)
}

func (d *sessionsData) count() int { return len(d.byID) }

func (d *sessionsData) get(id string) (*sessionEntry, error) {
	e, ok := d.byID[id]
	if !ok {
		return nil, &store.NotFoundError{Kind: "session", ID: id}
	}
	return e, nil
}

func (s *Store) CreateSession(ctx context.Context, sess *store.Session) (bool, error) {
	var (
		created bool
		out     store.Session
	)
	err := s.write(ctx, "session.create", func() error {
		if e, ok := s.sessions.byID[sess.ID]; ok {
			created, out = false, e.s
			return nil
		}
		if sess.ParentID != "" {
			if _, err := s.sessions.get(sess.ParentID); err != nil {
				return fmt.Errorf("create session %s: parent: %w", sess.ID, err)
			}
		}
		now := store.Millis(store.At(sess.CreatedAt))
		e := &sessionEntry{
			s:      store.Session{ID: sess.ID, Title: sess.Title, ParentID: sess.ParentID, Revision: 1, CreatedAt: now, UpdatedAt: now},
			msgIDs: make(map[string]bool),
		}
		s.sessions.byID[sess.ID] = e
		created, out = true, e.s
		return nil
	})
	if err != nil {
		return false, err
	}
	*sess = out
	return created, nil
}

func (s *Store) GetSession(ctx context.Context, id string) (*store.Session, error) {
	var out store.Session
	err := s.read(func() error {
		e, err := s.sessions.get(id)
		if err != nil {
			return err
		}
		out = e.s
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// newerFirst orders sessions as ListSessions does: newest first, by
// creation then id.
func newerFirst(a, b *store.Session) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}

func (s *Store) ListSessions(ctx context.Context, p store.ListSessionsParams) ([]*store.Session, store.SessionCursor, error) {
	limit := max(p.Limit, 1)
	var out []*store.Session
	err := s.read(func() error {
		after := &store.Session{CreatedAt: p.After.CreatedAt, ID: p.After.ID}
		for _, e := range s.sessions.byID {
			if !p.After.IsZero() && newerFirst(after, &e.s) >= 0 {
				continue
			}
			c := e.s
			out = append(out, &c)
		}
		return nil
	})
	if err != nil {
		return nil, store.SessionCursor{}, err
	}
	slices.SortFunc(out, newerFirst)
	var next store.SessionCursor
	if len(out) > limit {
		out = out[:limit]
		next = store.SessionCursor{CreatedAt: out[limit-1].CreatedAt, ID: out[limit-1].ID}
	}
	return out, next, nil
}

func (s *Store) DeleteSession(ctx context.Context, id string) error {
	return s.write(ctx, "session.delete", func() error {
		e, err := s.sessions.get(id)
		if err != nil {
			return err
		}
		for _, a := range e.archives {
			delete(s.sessions.archives, a.a.ID)
		}
		delete(s.sessions.byID, id)
		return nil
	})
}

func cloneMessage(m *store.Message) *store.Message {
	c := *m
	c.Parts = append(json.RawMessage(nil), m.Parts...)
	c.Metadata = append(json.RawMessage(nil), m.Metadata...)
	return &c
}

func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs []*store.Message) (*store.Session, error) {
	if err := store.CheckAppend(sessionID, msgs); err != nil {
		return nil, err
	}
	var out store.Session
	err := s.write(ctx, "session.append", func() error {
		e, err := s.sessions.get(sessionID)
		if err != nil {
			return err
		}
		// Check everything first: there is no rollback.
		idsOf := make([]string, len(msgs))
		seen := make(map[string]bool, len(msgs))
		for i, m := range msgs {
			id := m.ID
			if id == "" {
				id = ids.New("msg")
			}
			if e.msgIDs[id] || seen[id] {
				return fmt.Errorf("append to session %s: message id %s: %w", sessionID, id, store.ErrExists)
			}
			seen[id], idsOf[i] = true, id
		}
		now := store.AppendTime(msgs)
		for i, m := range msgs {
			e.s.LastSeq++
			m.SessionID, m.ID, m.Seq, m.CreatedAt = sessionID, idsOf[i], e.s.LastSeq, now
			if len(m.Metadata) == 0 {
				m.Metadata = json.RawMessage("{}")
			}
			e.msgs = append(e.msgs, cloneMessage(m))
			e.msgIDs[m.ID] = true
		}
		e.s.MessageCount += int64(len(msgs))
		e.s.Revision++
		e.s.UpdatedAt = now
		out = e.s
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

func (s *Store) ListMessages(ctx context.Context, p store.ListMessagesParams) ([]*store.Message, error) {
	limit := max(p.Limit, 1)
	var out []*store.Message
	err := s.read(func() error {
		e, err := s.sessions.get(p.SessionID)
		if err != nil {
			return err
		}
		i, _ := slices.BinarySearchFunc(e.msgs, p.AfterSeq+1, func(m *store.Message, seq int64) int { return cmp.Compare(m.Seq, seq) })
		for ; i < len(e.msgs) && len(out) < limit; i++ {
			out = append(out, cloneMessage(e.msgs[i]))
		}
		return nil
	})
	return out, err
}

func (s *Store) PrepareCompaction(ctx context.Context, p store.PrepareCompactionParams) (*store.CompactionResult, error) {
	if p.KeepLast < 0 {
		return nil, fmt.Errorf("compact session %s: keep last %d: must not be negative", p.SessionID, p.KeepLast)
	}
	var out *store.CompactionResult
	err := s.write(ctx, "session.compact.prepare", func() error {
		e, err := s.sessions.get(p.SessionID)
		if err != nil {
			return err
		}
		if _, ok := s.sessions.archives[p.ArchiveID]; ok {
			return fmt.Errorf("archive session %s: archive id %s: %w", p.SessionID, p.ArchiveID, store.ErrExists)
		}
		if len(e.msgs) <= p.KeepLast {
			return &store.NothingToCompactError{SessionID: p.SessionID, Messages: e.s.MessageCount, KeepLast: p.KeepLast}
		}
		st := store.ArchiveState{Session: e.s, Messages: make([]store.Message, len(e.msgs)), Memory: p.Memory}
		for i, m := range e.msgs {
			st.Messages[i] = *cloneMessage(m)
		}
		state, err := json.Marshal(st)
		if err != nil {
			return fmt.Errorf("freeze session %s: %w", p.SessionID, err)
		}
		now := store.Millis(store.At(p.Now))
		res := &store.CompactionResult{Session: new(e.s)}
		for _, a := range e.archives {
			if a.a.Status == store.ArchivePrepared {
				a.a.Status, a.a.SettledAt = store.ArchiveInterrupted, now
				a.a.Error = "abandoned before it settled (its process stopped)"
				res.Interrupted = append(res.Interrupted, a.a.ID)
			}
		}
		s.sessions.archN++
		a := &archiveEntry{n: s.sessions.archN, a: store.Archive{
			ID: p.ArchiveID, SessionID: p.SessionID, Status: store.ArchivePrepared, CutSeq: e.msgs[len(e.msgs)-1-p.KeepLast].Seq,
			MessageCount: int64(len(e.msgs)), Digest: store.DigestState(state), State: state, CreatedAt: now,
		}}
		e.archives = append(e.archives, a)
		s.sessions.archives[a.a.ID] = a
		res.Archive = archiveHead(a)
		res.Pruned = s.sessions.prune(e, a.a.ID, p.MaxArchives)
		out = res
		return nil
	})
	return out, err
}

// archiveHead copies an archive without its state.
func archiveHead(a *archiveEntry) *store.Archive {
	c := a.a
	c.State = nil
	return &c
}

// prune applies retention to a session's archives (see
// store.SessionStore).
func (d *sessionsData) prune(e *sessionEntry, current string, maxArchives int) []string {
	if maxArchives <= 0 {
		return nil
	}
	var pruned []string
	kept := 0
	for i := len(e.archives) - 1; i >= 0; i-- {
		a := e.archives[i]
		if !a.a.Complete() {
			continue
		}
		kept++
		if kept <= maxArchives || a.a.ID == current {
			continue
		}
		pruned = append(pruned, a.a.ID)
	}
	if len(pruned) > 0 {
		e.archives = slices.DeleteFunc(e.archives, func(a *archiveEntry) bool { return slices.Contains(pruned, a.a.ID) })
		for _, id := range pruned {
			delete(d.archives, id)
		}
	}
	return pruned
}

// prepared returns a session's attempt, refusing one that is not prepared.
// attempt returns a session and its prepared attempt archiveID.
func (d *sessionsData) attempt(sessionID, archiveID string) (*sessionEntry, *archiveEntry, error) {
	e, err := d.get(sessionID)
	if err != nil {
		return nil, nil, err
	}
	a, err := d.prepared(e, archiveID)
	if err != nil {
		return nil, nil, err
	}
	return e, a, nil
}

func (d *sessionsData) prepared(e *sessionEntry, archiveID string) (*archiveEntry, error) {
	a, ok := d.archives[archiveID]
	if !ok || a.a.SessionID != e.s.ID {
		return nil, &store.NotFoundError{Kind: "archive", ID: archiveID}
	}
	if a.a.Status != store.ArchivePrepared {
		return nil, &store.AttemptSettledError{ArchiveID: archiveID, Status: a.a.Status}
	}
	return a, nil
}

func (s *Store) CommitCompaction(ctx context.Context, p store.CommitCompactionParams) (*store.CompactionResult, error) {
	if p.Summary == nil || !p.Summary.Role.Valid() {
		return nil, fmt.Errorf("commit compaction %s: a summary message with a valid role is required", p.ArchiveID)
	}
	var out *store.CompactionResult
	err := s.write(ctx, "session.compact.commit", func() error {
		e, a, err := s.sessions.attempt(p.SessionID, p.ArchiveID)
		if err != nil {
			return err
		}
		m := cloneMessage(p.Summary)
		if m.ID == "" {
			m.ID = ids.New("msg")
		}
		cut := 0
		for cut < len(e.msgs) && e.msgs[cut].Seq <= a.a.CutSeq {
			cut++
		}
		// The compacted messages' ids are free again, as in SQLite where
		// they are deleted before the summary is inserted.
		if e.msgIDs[m.ID] && !slices.ContainsFunc(e.msgs[:cut], func(old *store.Message) bool { return old.ID == m.ID }) {
			return fmt.Errorf("append to session %s: message id %s: %w", p.SessionID, m.ID, store.ErrExists)
		}
		now := store.Millis(store.At(p.Now))
		m.SessionID, m.Seq, m.CreatedAt = p.SessionID, a.a.CutSeq, now
		if len(m.Metadata) == 0 {
			m.Metadata = json.RawMessage("{}")
		}
		for _, old := range e.msgs[:cut] {
			delete(e.msgIDs, old.ID)
		}
		e.msgs = append([]*store.Message{m}, e.msgs[cut:]...)
		e.msgIDs[m.ID] = true
		e.s.MessageCount = int64(len(e.msgs))
		e.s.Summary.Compactions++
		e.s.Summary.ArchiveID, e.s.Summary.CompactedAt = p.ArchiveID, now
		e.s.Revision++
		e.s.UpdatedAt = now
		a.a.Status, a.a.SettledAt = store.ArchiveSucceeded, now
		out = &store.CompactionResult{Session: new(e.s), Archive: archiveHead(a), Compacted: int64(cut)}
		out.Pruned = s.sessions.prune(e, p.ArchiveID, p.MaxArchives)
		return nil
	})
	return out, err
}

func (s *Store) FailCompaction(ctx context.Context, p store.FailCompactionParams) (*store.CompactionResult, error) {
	var out *store.CompactionResult
	err := s.write(ctx, "session.compact.fail", func() error {
		e, a, err := s.sessions.attempt(p.SessionID, p.ArchiveID)
		if err != nil {
			return err
		}
		a.a.Status, a.a.Error, a.a.SettledAt = store.ArchiveFailed, p.Reason, store.Millis(store.At(p.Now))
		out = &store.CompactionResult{Session: new(e.s), Archive: archiveHead(a)}
		out.Pruned = s.sessions.prune(e, p.ArchiveID, p.MaxArchives)
		return nil
	})
	return out, err
}

func (s *Store) ListArchives(ctx context.Context, sessionID string) ([]*store.Archive, error) {
	var out []*store.Archive
	err := s.read(func() error {
		e, err := s.sessions.get(sessionID)
		if err != nil {
			return err
		}
		for i := len(e.archives) - 1; i >= 0; i-- {
			out = append(out, archiveHead(e.archives[i]))
		}
		return nil
	})
	return out, err
}

func (s *Store) GetArchive(ctx context.Context, id string) (*store.Archive, error) {
	var out store.Archive
	err := s.read(func() error {
		a, ok := s.sessions.archives[id]
		if !ok {
			return &store.NotFoundError{Kind: "archive", ID: id}
		}
		out = a.a
		out.State = append(json.RawMessage(nil), a.a.State...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}
