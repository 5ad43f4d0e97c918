package memory

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn/store"
)

var _ store.JournalStore = (*Store)(nil)

// journal is one run's journal: its bytes and when they last grew.
type journal struct {
	data    []byte
	updated time.Time
}

// journalsData holds journals by run id. The caller holds s.mu.
type journalsData map[string]*journal

func (s *Store) AppendJournal(ctx context.Context, runID string, data []byte) (int64, error) {
	if err := store.CheckJournalAppend(runID, data); err != nil {
		return 0, err
	}
	var size int64
	err := s.write(ctx, "journal.append", func() error {
		if s.journals == nil {
			s.journals = journalsData{}
		}
		j := s.journals[runID]
		if j == nil && len(data) > 0 {
			j = &journal{}
			s.journals[runID] = j
		}
		if j == nil {
			return nil // nothing appended to nothing
		}
		if len(data) > 0 {
			j.data = append(j.data, data...)
			j.updated = store.At(time.Time{})
		}
		size = int64(len(j.data))
		return nil
	})
	return size, err
}

func (s *Store) ReadJournal(ctx context.Context, runID string, off int64, max int) ([]byte, error) {
	var out []byte
	err := s.read(func() error {
		j := s.journals[runID]
		if j == nil || off >= int64(len(j.data)) || max <= 0 {
			return nil
		}
		off = min(off, int64(len(j.data)))
		end := min(int64(len(j.data)), off+int64(max))
		out = slices.Clone(j.data[off:end])
		return nil
	})
	return out, err
}

func (s *Store) JournalSize(ctx context.Context, runID string) (int64, error) {
	var n int64
	err := s.read(func() error {
		if j := s.journals[runID]; j != nil {
			n = int64(len(j.data))
		}
		return nil
	})
	return n, err
}

func (s *Store) DeleteJournal(ctx context.Context, runID string) (int64, error) {
	var n int64
	err := s.write(ctx, "journal.delete", func() error {
		if j := s.journals[runID]; j != nil {
			n = int64(len(j.data))
			delete(s.journals, runID)
		}
		return nil
	})
	return n, err
}

func (s *Store) StaleJournals(ctx context.Context, before time.Time, limit int) ([]string, error) {
	var out []string
	err := s.read(func() error {
		type stale struct {
			id string
			at time.Time
		}
		var all []stale
		for id, j := range s.journals {
			if _, ok := s.runs.byID[id]; !ok && j.updated.Before(before) {
				all = append(all, stale{id, j.updated})
			}
		}
		slices.SortFunc(all, func(a, b stale) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return strings.Compare(a.id, b.id)
		})
		for _, st := range all[:min(len(all), max(limit, 0))] {
			out = append(out, st.id)
		}
		return nil
	})
	return out, err
}
