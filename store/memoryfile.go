package store

import (
	"context"
	"fmt"

	"github.com/cairnhq/cairn/internal/ids"
)

// MemoryFileStore keeps compaction's memory files (a session's full
// summary, memory/<session>.md) in the store, for hosts that share one:
// the host that reads a memory file writes it out from here. Optional, as
// JournalStore.
//
// A summary is stored per compaction attempt (the archive id): staged
// before the attempt commits, it is the session's memory once the
// session's summary names that attempt, exactly as a staged file becomes
// the memory file when it is published. Safe for concurrent use from many
// processes.
type MemoryFileStore interface {
	// PutMemoryFile stores the summary of attempt archiveID of a session,
	// replacing one stored for the same attempt.
	PutMemoryFile(ctx context.Context, sessionID, archiveID, body string) error
	// GetMemoryFile returns the summary of attempt archiveID of a
	// session; an error wrapping ErrNotFound when none is stored.
	GetMemoryFile(ctx context.Context, sessionID, archiveID string) (string, error)
	// PruneMemoryFiles deletes a session's summaries but the one of
	// attempt keep ("": all of them).
	PruneMemoryFiles(ctx context.Context, sessionID, keep string) error
}

// MemoryFiles returns s's MemoryFileStore when s keeps memory files,
// else nil.
func MemoryFiles(s Store) MemoryFileStore {
	m, _ := s.(MemoryFileStore)
	return m
}

// CheckMemoryFile validates a PutMemoryFile's ids, for every backend alike.
func CheckMemoryFile(sessionID, archiveID string) error {
	if err := ids.Validate("session id", sessionID); err != nil {
		return fmt.Errorf("store memory file: %w", err)
	}
	if err := ids.Validate("archive id", archiveID); err != nil {
		return fmt.Errorf("store memory file: %w", err)
	}
	return nil
}
