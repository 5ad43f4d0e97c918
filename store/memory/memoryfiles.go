package memory

import (
	"context"

	"github.com/cairnhq/cairn/store"
)

var _ store.MemoryFileStore = (*Store)(nil)

// memoryFiles holds summaries by session id, then archive id. The caller
// holds s.mu.
type memoryFiles map[string]map[string]string

func (s *Store) PutMemoryFile(ctx context.Context, sessionID, archiveID, body string) error {
	if err := store.CheckMemoryFile(sessionID, archiveID); err != nil {
		return err
	}
	return s.write(ctx, "memory.put", func() error {
		if s.memFiles == nil {
			s.memFiles = memoryFiles{}
		}
		if s.memFiles[sessionID] == nil {
			s.memFiles[sessionID] = map[string]string{}
		}
		s.memFiles[sessionID][archiveID] = body
		return nil
	})
}

func (s *Store) GetMemoryFile(ctx context.Context, sessionID, archiveID string) (string, error) {
	var body string
	err := s.read(func() error {
		b, ok := s.memFiles[sessionID][archiveID]
		if !ok {
			return &store.NotFoundError{Kind: "memory file", ID: sessionID + "/" + archiveID}
		}
		body = b
		return nil
	})
	return body, err
}

func (s *Store) PruneMemoryFiles(ctx context.Context, sessionID, keep string) error {
	return s.write(ctx, "memory.prune", func() error {
		for id := range s.memFiles[sessionID] {
			if id != keep {
				delete(s.memFiles[sessionID], id)
			}
		}
		if len(s.memFiles[sessionID]) == 0 {
			delete(s.memFiles, sessionID)
		}
		return nil
	})
}
