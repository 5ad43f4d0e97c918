package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/cairnhq/cairn/internal/atomicfile"
	"github.com/cairnhq/cairn/store"
)

// When the store is shared by several machines (Options.MemoryFiles), a
// session's full summary is kept in the store too, per compaction attempt:
// Compact stores it beside the staged file before its commit, and the
// session's summary names the attempt whose text is the memory. A host
// that reads the memory (Compact, Export, ReadMemory, Read) takes it from
// the store and writes it out to its own memory folder (0600), so the
// path a preview or get_session gives names a file on the reader's
// machine too.

// sharedMemory remembers, per session, the attempt whose summary this
// Manager last wrote out, so reads do not fetch it again.
type sharedMemory struct {
	mu      sync.Mutex
	written map[string]string // session id -> archive id
}

func (s *sharedMemory) isWritten(sessionID, archiveID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written[sessionID] == archiveID
}

func (s *sharedMemory) markWritten(sessionID, archiveID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == nil {
		s.written = map[string]string{}
	}
	s.written[sessionID] = archiveID
}

// stageShared stores attempt's summary in the shared store, before the
// attempt commits.
func (m *Manager) stageShared(ctx context.Context, sessionID, attempt, summary string) error {
	if m.opts.MemoryFiles == nil {
		return nil
	}
	if err := m.opts.MemoryFiles.PutMemoryFile(ctx, sessionID, attempt, summary); err != nil {
		return fmt.Errorf("stage summary in the store: %w", err)
	}
	return nil
}

// publishShared lets go of the session's other summaries in the store,
// once attempt committed and its file is published here.
func (m *Manager) publishShared(ctx context.Context, sessionID, attempt string) error {
	if m.opts.MemoryFiles == nil {
		return nil
	}
	m.shared.markWritten(sessionID, attempt)
	return m.opts.MemoryFiles.PruneMemoryFiles(context.WithoutCancel(ctx), sessionID, attempt)
}

// readShared returns the session's memory from the shared store and
// writes it out to this machine's memory folder when the copy there is
// not the current one. ok is false when the store keeps no memory, or
// none of the session's current attempt (a compaction made before the
// store was shared: the local file, if any, is the memory).
func (m *Manager) readShared(ctx context.Context, sess *store.Session) (body string, ok bool, err error) {
	attempt := sess.Summary.ArchiveID
	if m.opts.MemoryFiles == nil || attempt == "" {
		return "", false, nil
	}
	body, err = m.opts.MemoryFiles.GetMemoryFile(ctx, sess.ID, attempt)
	if errors.Is(err, store.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read memory of session %s: %w", sess.ID, err)
	}
	if err := m.writeOut(sess.ID, attempt, body); err != nil {
		return "", false, err
	}
	return body, true, nil
}

// writeOut writes body as the session's memory file here, unless this
// Manager wrote attempt's already or the file holds it.
func (m *Manager) writeOut(sessionID, attempt, body string) error {
	if m.opts.MemoryDir == "" || m.shared.isWritten(sessionID, attempt) {
		return nil
	}
	path := m.MemoryPath(sessionID)
	if cur, err := os.ReadFile(path); err != nil || string(cur) != body {
		if err := os.MkdirAll(m.opts.MemoryDir, 0o700); err != nil {
			return fmt.Errorf("write out memory file: %w", err)
		}
		if err := atomicfile.WriteFile(path, []byte(body), 0o600); err != nil {
			return fmt.Errorf("write out memory file: %w", err)
		}
	}
	m.shared.markWritten(sessionID, attempt)
	return nil
}

// writeOutShared makes sure the memory file of a compacted session is
// here, for a reader given its path; a failure is not the read's.
func (m *Manager) writeOutShared(ctx context.Context, sess *store.Session) {
	if m.opts.MemoryFiles == nil || sess.Summary.ArchiveID == "" || m.shared.isWritten(sess.ID, sess.Summary.ArchiveID) {
		return
	}
	_, _, _ = m.readShared(ctx, sess)
}

// removeShared deletes a session's memory from the shared store.
func (m *Manager) removeShared(sessionID string) error {
	if m.opts.MemoryFiles == nil {
		return nil
	}
	m.shared.markWritten(sessionID, "")
	if err := m.opts.MemoryFiles.PruneMemoryFiles(context.Background(), sessionID, ""); err != nil {
		return fmt.Errorf("remove memory from the store: %w", err)
	}
	return nil
}
