package runs

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/pgtest"
	"github.com/cairnhq/cairn/internal/testws"
	"github.com/cairnhq/cairn/retention"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/sqlite"
)

// TestRetentionDeletesStoreJournals: with journals kept in the store (a
// shared store's mode), retention through the engine deletes a deleted
// run's journal chunks, and its orphan sweep finds a journal whose run
// is gone behind more than a listing's worth of kept runs' old journals.
func TestRetentionDeletesStoreJournals(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		ws := testws.New(t, map[string]string{"lines.yaml": linesYAML})
		testRetentionOfStoreJournals(t, &testEnv{t: t, ws: ws, st: testws.Store(t, ws, sqlite.Options{}), ctx: context.Background()})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		ref := pgRef{URL: pgtest.URL(t), Workspace: pgtest.WorkspaceID()}
		ws := testws.New(t, map[string]string{"lines.yaml": linesYAML})
		if err := ws.Prepare(); err != nil {
			t.Fatal(err)
		}
		pg, err := postgres.Open(context.Background(), postgres.Config{URL: ref.URL, WorkspaceID: ref.Workspace, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pg.Close() })
		// The host's shared mode: lease coordination, journals in the store.
		testRetentionOfStoreJournals(t, &testEnv{t: t, ws: ws, st: pg, ctx: context.Background()}, func(o *Options) {
			*o = pgLeaseOptions(pg, ws, ref)
		})
	})
}

func testRetentionOfStoreJournals(t *testing.T, te *testEnv, opts ...func(*Options)) {
	ctx := te.ctx
	j := store.Journals(te.st)
	te.e = te.engine(append(opts, func(o *Options) { o.Journals = j })...)
	gone := te.wait(te.e, te.launch("lines", "").ID)
	orphan := te.wait(te.e, te.launch("lines", "").ID)
	for _, id := range []string{gone.ID, orphan.ID} {
		if n, err := j.JournalSize(ctx, id); err != nil || n == 0 {
			t.Fatalf("run %s: journal of %d bytes in the store (%v)", id, n, err)
		}
	}
	// More kept runs with old journals than one listing of stale
	// journals returns, appended before the orphan's.
	now := time.Now()
	for i := range 1005 {
		id := fmt.Sprintf("run_kept_%04d", i)
		if err := te.st.CreateRun(ctx, &store.Run{ID: id, Target: "lines", Status: store.RunSucceeded, CreatedAt: now, FinishedAt: now}); err != nil {
			t.Fatal(err)
		}
		if _, err := j.AppendJournal(ctx, id, []byte("{}\n")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := j.AppendJournal(ctx, orphan.ID, []byte("{}\n")); err != nil { // the newest stale journal
		t.Fatal(err)
	}
	// A collection that stopped between deleting a run and its journal.
	if got, err := te.st.DeleteRuns(ctx, []string{orphan.ID}); err != nil || len(got.Deleted) != 1 {
		t.Fatalf("delete %s: %+v, %v", orphan.ID, got, err)
	}

	c := retention.NewCollector(retention.Options{Store: te.st, Journals: te.e, Clock: clock.NewFake(now.Add(2 * time.Hour))})
	got, rep, err := c.Delete(ctx, []string{gone.ID})
	if err != nil || len(got.Deleted) != 1 || rep.Journals != 1 || rep.JournalBytes == 0 {
		t.Fatalf("runs delete: %+v, report %+v, %v", got, rep, err)
	}
	rep, err = c.Collect(ctx, false) // the zero policy keeps every run
	if err != nil || len(rep.Deleted) != 0 || rep.Orphans != 1 {
		t.Fatalf("gc: report %+v, %v; want the one orphan journal swept and no run deleted", rep, err)
	}
	for _, id := range []string{gone.ID, orphan.ID} {
		n, err := j.JournalSize(ctx, id)
		b, rerr := j.ReadJournal(ctx, id, 0, 1<<20)
		if err != nil || rerr != nil || n != 0 || len(b) != 0 {
			t.Fatalf("run %s: %d bytes left in the store's journal (%d read; %v, %v)", id, n, len(b), err, rerr)
		}
	}
	if n, err := j.JournalSize(ctx, "run_kept_0000"); err != nil || n != 3 {
		t.Fatalf("a kept run's journal: %d bytes, %v", n, err)
	}
}
