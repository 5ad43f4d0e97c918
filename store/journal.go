package store

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/internal/ids"
)

// JournalStore keeps run journals in the store, for hosts that share one
// (several machines on one PostgreSQL): any host then follows any run.
// It is optional: a backend that implements it says so by satisfying the
// interface (see Journals), and the run engine keeps journals as files
// otherwise.
//
// A journal is a byte stream of whole JSON lines, appended in chunks: one
// AppendJournal is one chunk, written atomically with the journal's new
// size, so concurrent appenders (a run's owner and its step supervisor)
// never interleave within a chunk and a reader never sees half a chunk.
// Offsets are byte offsets into the stream, which is what the engine's
// cursors are. All methods are safe for concurrent use from many
// processes; a journal that does not exist reads as empty (size 0), never
// as ErrNotFound.
type JournalStore interface {
	// AppendJournal appends data to run id's journal as one chunk,
	// creating the journal, and returns the journal's size after it.
	// Empty data appends nothing. A chunk is at most MaxJournalChunk
	// bytes.
	AppendJournal(ctx context.Context, runID string, data []byte) (int64, error)
	// ReadJournal returns run id's journal from byte offset off: at most
	// max bytes (at least one chunk's worth may be cut to max), nothing
	// at or past its end.
	ReadJournal(ctx context.Context, runID string, off int64, max int) ([]byte, error)
	// JournalSize is the journal's length: one indexed lookup, cheap
	// enough for followers to poll.
	JournalSize(ctx context.Context, runID string) (int64, error)
	// DeleteJournal removes run id's journal and returns the bytes it
	// held (0 when it had none).
	DeleteJournal(ctx context.Context, runID string) (int64, error)
	// StaleJournals lists up to limit runs that no longer exist whose
	// journal was last appended to before t, oldest first: the journals
	// retention sweeps as orphans. A journal of a stored run is never
	// listed, so that many kept runs with old journals cannot hide the
	// orphans behind the limit.
	StaleJournals(ctx context.Context, before time.Time, limit int) ([]string, error)
}

// MaxJournalChunk bounds one AppendJournal.
const MaxJournalChunk = 1 << 20

// Journals returns s's JournalStore when s keeps journals, else nil.
func Journals(s Store) JournalStore {
	j, _ := s.(JournalStore)
	return j
}

// CheckJournalAppend validates an AppendJournal's arguments, for every
// backend alike.
func CheckJournalAppend(runID string, data []byte) error {
	if err := ids.Validate("run id", runID); err != nil {
		return fmt.Errorf("append journal: %w", err)
	}
	if len(data) > MaxJournalChunk {
		return fmt.Errorf("append journal %s: a chunk of %d bytes is over %d: append it in parts", runID, len(data), MaxJournalChunk)
	}
	return nil
}

// JournalChunk is one stored chunk: the offset of its first byte and its
// bytes.
type JournalChunk struct {
	Off  int64
	Data []byte
}

// JournalReadChunks is how many chunks a backend's ReadJournal fetches at
// most in one query.
const JournalReadChunks = 256

// CutJournal joins chunks (in order, the first holding or following off)
// into at most max bytes from off: what ReadJournal returns.
func CutJournal(chunks []JournalChunk, off int64, max int) []byte {
	var out []byte
	for _, c := range chunks {
		if len(out) >= max {
			break
		}
		b := c.Data
		if c.Off < off {
			b = b[min(off-c.Off, int64(len(b))):]
		}
		out = append(out, b[:min(len(b), max-len(out))]...)
	}
	return out
}
