package runs

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/cairnhq/cairn/store"
)

// storeJournals keeps journals in the store (store.JournalStore), for
// hosts that share one: a follower on any machine reads what an owner on
// another appended. Appends are batched: a writer's lines queue while one
// append is in flight and go together in the next, so a step printing
// fast costs a round trip per batch, not per line. What a run keeps in
// files beside its journal (a supervised step's step file, output: file
// folders) stays in the local journal folder dir.
type storeJournals struct {
	st  store.JournalStore
	dir string
	// stored, when set, is called after an append reached the store, so
	// this process's followers read it at once.
	stored func(runID string)
}

// Bounds of a store journal writer.
const (
	// storeChunk is the most one append carries (whole records; a longer
	// record goes alone).
	storeChunk = 256 << 10
	// storePending is how much a writer queues before write waits for
	// the store.
	storePending = 4 << 20
	// storeTimeout bounds one store call of a journal.
	storeTimeout = 30 * time.Second
)

func newStoreJournals(st store.JournalStore, dir string, stored func(string)) *storeJournals {
	return &storeJournals{st: st, dir: dir, stored: stored}
}

func storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), storeTimeout)
}

func (j *storeJournals) open(id string) (journalFile, error) {
	w := &storeJournal{j: j, id: id}
	w.cond = sync.NewCond(&w.mu)
	return w, nil
}

// storeJournal is one writer of a store journal. write queues; one
// goroutine at a time (started by write when none runs) appends what is
// queued.
type storeJournal struct {
	j  *storeJournals
	id string

	mu       sync.Mutex
	cond     *sync.Cond // signalled when an append ends
	pending  []byte
	flushing bool
	err      error // an append that failed, until write or sync says so
}

// write queues line (whole records) for the store and returns; it waits
// only while storePending bytes are queued. An error is that of an
// earlier append (whose records are lost, as a failed write to a file
// loses its line), said once; later appends go on.
func (w *storeJournal) write(line []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.pending) >= storePending && w.flushing {
		w.cond.Wait()
	}
	err := w.err // an append that failed since the last call: said once
	w.err = nil
	w.pending = append(w.pending, line...)
	if !w.flushing {
		w.flushing = true
		go w.flush()
	}
	return err
}

// flush appends what is queued, a chunk at a time, until nothing is.
func (w *storeJournal) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.pending) > 0 {
		n := chunkEnd(w.pending, storeChunk)
		chunk := w.pending[:n:n]
		w.mu.Unlock()
		ctx, cancel := storeCtx()
		_, err := w.j.st.AppendJournal(ctx, w.id, chunk)
		cancel()
		w.mu.Lock()
		w.pending = w.pending[n:]
		if len(w.pending) == 0 {
			w.pending = nil // let a large buffer go
		}
		if err != nil {
			w.err = err // that chunk's records are lost; the next go on
		}
		if w.j.stored != nil && err == nil {
			w.mu.Unlock()
			w.j.stored(w.id)
			w.mu.Lock()
		}
		w.cond.Broadcast()
	}
	w.flushing = false
	w.cond.Broadcast()
}

// chunkEnd is where the first chunk of b ends: after the last whole
// record within max bytes, or after the first record when it is longer
// (up to store.MaxJournalChunk).
func chunkEnd(b []byte, max int) int {
	if len(b) <= max {
		return len(b)
	}
	for i := max - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return i + 1
		}
	}
	for i := max; i < len(b) && i < store.MaxJournalChunk; i++ {
		if b[i] == '\n' {
			return i + 1
		}
	}
	return min(len(b), store.MaxJournalChunk)
}

// sync waits until everything written so far is in the store.
func (w *storeJournal) sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.flushing {
		w.cond.Wait()
	}
	err := w.err
	w.err = nil
	return err
}

func (w *storeJournal) close() error { return w.sync() }

func (j *storeJournals) reader(id string, off int64) (io.ReadCloser, error) {
	return &storeReader{j: j, id: id, off: off}, nil
}

// storeReader reads a store journal from off, a page at a time.
type storeReader struct {
	j   *storeJournals
	id  string
	off int64
	buf []byte
	eof bool
}

// storeReadPage is how much one read of a store journal fetches.
const storeReadPage = 1 << 20

func (r *storeReader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 && !r.eof {
		ctx, cancel := storeCtx()
		b, err := r.j.st.ReadJournal(ctx, r.id, r.off, storeReadPage)
		cancel()
		if err != nil {
			return 0, err
		}
		r.buf, r.off, r.eof = b, r.off+int64(len(b)), len(b) == 0
	}
	if len(r.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *storeReader) Close() error { return nil }

func (j *storeJournals) size(id string) (int64, error) {
	ctx, cancel := storeCtx()
	defer cancel()
	return j.st.JournalSize(ctx, id)
}

func (j *storeJournals) remove(id string) (int64, error) {
	files, err := (&fileJournals{dir: j.dir}).remove(id) // what this machine kept beside it
	if err != nil {
		return 0, err
	}
	ctx, cancel := storeCtx()
	defer cancel()
	n, err := j.st.DeleteJournal(ctx, id)
	return n + files, err
}

// staleBatch bounds one listing of orphan journals (the store lists only
// journals whose run is gone); retention's next pass lists the rest.
const staleBatch = 1000

func (j *storeJournals) stale(before time.Time) ([]string, error) {
	ctx, cancel := storeCtx()
	defer cancel()
	return j.st.StaleJournals(ctx, before, staleBatch)
}

// filesDir is the folder where runs keep files beside their journals
// (output: file), on this machine; ok is false for memory journals.
func filesDir(j journals) (dir string, ok bool) {
	switch j := j.(type) {
	case *fileJournals:
		return j.dir, true
	case *storeJournals:
		return j.dir, true
	}
	return "", false
}
