package runs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"

	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/pgtest"
	"github.com/cairnhq/cairn/internal/testws"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/postgres"
)

// sharedEnv is two engines standing for two machines: separate workspace
// folders (state roots) and one store that keeps the journals.
type sharedEnv struct {
	te       *testEnv
	st       store.Store
	follower *Engine
}

func setupShared(t *testing.T, files map[string]string, opts ...func(*Options)) *sharedEnv {
	t.Helper()
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	shared := func(o *Options) { o.InMemory, o.Journals = true, store.Journals(st) }
	te := &testEnv{t: t, ws: testws.New(t, files), st: st, ctx: context.Background()}
	te.e = te.engine(append([]func(*Options){shared}, opts...)...)
	other := &testEnv{t: t, ws: testws.New(t, files), st: st, ctx: context.Background()}
	return &sharedEnv{te: te, st: st, follower: other.engine(shared)}
}

const linesYAML = `
steps:
  - id: lines
    shell: seq 1 3000
`

// TestStoreJournalFollowedFromAnotherHost: a run printing 3000 lines on
// one engine is watched from another engine over the same store (no file
// in common): the watcher sees every line once, in order; paged reads
// by cursor give the same records.
func TestStoreJournalFollowedFromAnotherHost(t *testing.T) {
	t.Parallel()
	se := setupShared(t, map[string]string{"lines.yaml": linesYAML})
	r := se.te.launch("lines", "")
	var got []Record
	ctx, cancel := context.WithTimeout(se.te.ctx, time.Minute)
	defer cancel()
	done, err := se.follower.Watch(ctx, r.ID, WatchParams{OnRecord: func(rec Record) error { got = append(got, rec); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != store.RunSucceeded {
		t.Fatalf("run %s: %s", done.Status, done.Error)
	}
	nums := numbers(t, textsOf(got, "lines"))
	if len(nums) != 3000 {
		t.Fatalf("the watcher saw %d lines, want 3000", len(nums))
	}
	for i, n := range nums {
		if n != i+1 {
			t.Fatalf("line %d is %d", i+1, n)
		}
	}
	if got[0].Type != RecordStart || got[len(got)-1].Type != RecordEnd {
		t.Fatalf("the journal runs from %s to %s", got[0].Type, got[len(got)-1].Type)
	}
	// read_run_output from the other host: the same records, by cursor.
	var paged []Record
	for cursor := ""; ; {
		out, err := se.follower.ReadOutput(se.te.ctx, r.ID, ReadParams{Cursor: cursor, Limit: 700})
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, out.Records...)
		if out.Done {
			break
		}
		cursor = out.Cursor
	}
	if len(paged) != len(got) {
		t.Fatalf("paged reads gave %d records, the watch %d", len(paged), len(got))
	}
}

// TestStoreJournalKeepsCapsAndRedaction: the caps (per line, per run with
// head and tail) and secret redaction hold for journals in the store.
func TestStoreJournalKeepsCapsAndRedaction(t *testing.T) {
	t.Parallel()
	const runCap, lineCap, secret = 16 << 10, 101, "s3cr3t-value"
	se := setupShared(t, map[string]string{
		"caps.yaml": capsYAML,
		"leak.yaml": "steps:\n  - id: leak\n    exec: [sh, -c, 'echo \"token $TOK\"']\n    env: {TOK: \"${{ secrets.TOK }}\"}\n",
	}, func(o *Options) {
		o.JournalRunCap, o.JournalLineCap, o.Secrets = runCap, lineCap, mapSecrets{"TOK": secret}
	})
	r := se.te.wait(se.te.e, se.te.launch("caps", "").ID)
	if r.Status != store.RunSucceeded {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	recs := se.te.records(se.follower, r.ID)
	if long := textsOf(recs, "noisy")[0]; long.Dropped != 5000-lineCap {
		t.Fatalf("the long line: %d bytes dropped, want %d", long.Dropped, 5000-lineCap)
	}
	head, trunc, tail := splitAtTruncated(t, recs)
	headNums, tailNums := numbers(t, textsOf(head, "noisy")[3:]), numbers(t, textsOf(tail, "noisy"))
	if headNums[0] != 1 || tailNums[len(tailNums)-1] != 20000 || len(headNums)+int(trunc.Lines)+len(tailNums) != 20000 {
		t.Fatalf("head %d lines from %d, %d dropped, tail %d lines to %d", len(headNums), headNums[0], trunc.Lines, len(tailNums), tailNums[len(tailNums)-1])
	}
	size, err := store.Journals(se.st).JournalSize(se.te.ctx, r.ID)
	if err != nil || size > runCap+2<<10 {
		t.Fatalf("the stored journal holds %d bytes (%v): over its cap of %d plus records", size, err, runCap)
	}

	leak := se.te.wait(se.te.e, se.te.launch("leak", "").ID)
	b, err := store.Journals(se.st).ReadJournal(se.te.ctx, leak.ID, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(secret)) || !bytes.Contains(b, []byte("token ***")) {
		t.Fatalf("the stored journal is not redacted:\n%s", b)
	}
}

// TestStoreJournalWriterBatchesAndOrders drives a store journal writer
// directly: lines written while an append is in flight go in the next
// one, in order, and close returns once all are stored.
func TestStoreJournalWriterBatchesAndOrders(t *testing.T) {
	t.Parallel()
	st := memory.New()
	defer st.Close()
	gate, entered := make(chan struct{}), make(chan struct{})
	counter := &countingJournals{JournalStore: st, gate: gate, entered: entered}
	j := newStoreJournals(counter, t.TempDir(), nil)
	f, err := j.open("run_batch")
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i := range 500 {
		line := []byte(strconv.Itoa(i) + "\n")
		want = append(want, line...)
		if err := f.write(line); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			<-entered // the first line's append is in flight
		}
	}
	close(gate) // the first append was held until all 500 were queued
	if err := f.close(); err != nil {
		t.Fatal(err)
	}
	got, err := st.ReadJournal(context.Background(), "run_batch", 0, 1<<20)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("stored %q, %v", got, err)
	}
	if n := counter.appends(); n != 2 {
		t.Fatalf("%d appends for 500 lines written while the first was in flight; want 2", n)
	}
	// A record longer than a chunk goes whole, in one append.
	big := append(bytes.Repeat([]byte("x"), storeChunk+10), '\n')
	if got := chunkEnd(append([]byte("a\n"), big...), storeChunk); got != 2 {
		t.Fatalf("chunkEnd cut a short record and a long one at %d, want 2", got)
	}
	if got := chunkEnd(big, storeChunk); got != len(big) {
		t.Fatalf("chunkEnd cut a long record at %d, want %d", got, len(big))
	}
	if got := chunkEnd([]byte(strings.Repeat("y\n", 10)), 5); got != 4 {
		t.Fatalf("chunkEnd within 5 bytes = %d, want 4", got)
	}
}

// countingJournals counts appends; with gate, the first closes entered
// and waits until the gate closes.
type countingJournals struct {
	store.JournalStore
	gate    chan struct{}
	entered chan struct{}
	mu      sync.Mutex
	n       int
}

func (c *countingJournals) AppendJournal(ctx context.Context, id string, data []byte) (int64, error) {
	c.mu.Lock()
	c.n++
	first := c.n == 1
	c.mu.Unlock()
	if first && c.gate != nil {
		close(c.entered)
		<-c.gate
	}
	return c.JournalStore.AppendJournal(ctx, id, data)
}

func (c *countingJournals) appends() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestSupervisedStepWritesToTheDatabase: with journals in PostgreSQL, a
// supervised step's supervisor (a separate process) appends its output
// to the database itself: an engine on another workspace folder (another
// machine) reads every line, and this machine keeps no journal file.
func TestSupervisedStepWritesToTheDatabase(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	ctx := context.Background()
	wsID := pgtest.WorkspaceID()
	pg, err := postgres.Open(ctx, postgres.Config{URL: url, WorkspaceID: wsID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	shared := func(o *Options) {
		o.Journals, o.JournalDatabase = pg, &JournalDatabase{URL: url, WorkspaceID: wsID}
	}
	te := setup(t, map[string]string{"lines.yaml": linesYAML}, shared)
	other := &testEnv{t: t, ws: testws.New(t, nil), st: te.st, ctx: ctx}
	follower := other.engine(shared)
	r := te.wait(te.e, te.launch("lines", "").ID)
	if r.Status != store.RunSucceeded {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	var got []Record
	if _, err := follower.Watch(ctx, r.ID, WatchParams{OnRecord: func(rec Record) error { got = append(got, rec); return nil }}); err != nil {
		t.Fatal(err)
	}
	if nums := numbers(t, textsOf(got, "lines")); len(nums) != 3000 || nums[0] != 1 || nums[2999] != 3000 {
		t.Fatalf("the other engine read %d lines", len(nums))
	}
	if _, err := os.Stat(filepath.Join(te.ws.OutputDir(), r.ID+journalExt)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a journal file was written: %v", err)
	}
	var chunks int
	if err := pg.Pool().QueryRow(ctx, "SELECT count(*) FROM journal_chunks WHERE run_id = $1", r.ID).Scan(&chunks); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records in %d chunks (appends)", len(got), chunks)
}

// TestStoreJournalWriterGoesOnAfterAFailedAppend: an append the store
// refuses loses its records and is reported once, by the next write or
// sync; the records written after it are stored.
func TestStoreJournalWriterGoesOnAfterAFailedAppend(t *testing.T) {
	t.Parallel()
	st := memory.New()
	defer st.Close()
	j := newStoreJournals(&failingJournals{JournalStore: st, fail: 1}, t.TempDir(), nil)
	f, _ := j.open("run_fail")
	if err := f.write([]byte("lost\n")); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(); err == nil {
		t.Fatal("sync after a refused append: no error")
	}
	if err := f.sync(); err != nil {
		t.Fatalf("the error is said twice: %v", err)
	}
	if err := f.write([]byte("kept\n")); err != nil {
		t.Fatal(err)
	}
	if err := f.close(); err != nil {
		t.Fatal(err)
	}
	if got, err := st.ReadJournal(context.Background(), "run_fail", 0, 1<<10); err != nil || string(got) != "kept\n" {
		t.Fatalf("stored %q, %v; want the record after the failure", got, err)
	}
}

// failingJournals refuses its first fail appends.
type failingJournals struct {
	store.JournalStore
	mu   sync.Mutex
	fail int
}

func (f *failingJournals) AppendJournal(ctx context.Context, id string, data []byte) (int64, error) {
	f.mu.Lock()
	refuse := f.fail > 0
	f.fail--
	f.mu.Unlock()
	if refuse {
		return 0, errors.New("database unreachable")
	}
	return f.JournalStore.AppendJournal(ctx, id, data)
}
