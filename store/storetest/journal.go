package storetest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// testJournals runs the journal cases on backends that keep journals
// (store.JournalStore); others skip them.
func testJournals(t *testing.T, newStore NewFunc) {
	skipUnless[store.JournalStore](t, newStore, "this backend keeps no journals (store.JournalStore): the run engine keeps them as files")
	runCases(t, newStore, []storeCase{
		{"append and read", testJournalAppendRead},
		{"read from any offset", testJournalOffsets},
		{"concurrent appends keep whole chunks", testJournalConcurrent},
		{"delete and stale", testJournalDeleteStale},
		{"bad input", testJournalBadInput},
	})
}

// skipUnless skips t when newStore's stores do not implement T, an
// optional interface, saying why.
func skipUnless[T any](t *testing.T, newStore NewFunc, why string) {
	t.Helper()
	probe := newStore(t)
	_, ok := probe.(T)
	probe.Close()
	if !ok {
		t.Skip(why)
	}
}

func journalsOf(s store.Store) store.JournalStore { return s.(store.JournalStore) }

func testJournalAppendRead(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := journalsOf(s)
	if n, err := j.JournalSize(ctx, "run_missing"); err != nil || n != 0 {
		t.Fatalf("size of a missing journal = %d, %v; want 0", n, err)
	}
	if b, err := j.ReadJournal(ctx, "run_missing", 0, 1<<10); err != nil || len(b) != 0 {
		t.Fatalf("read of a missing journal = %q, %v; want nothing", b, err)
	}
	var want []byte
	for i := range 5 {
		chunk := fmt.Appendf(nil, "{\"n\":%d}\n", i)
		want = append(want, chunk...)
		n, err := j.AppendJournal(ctx, "run_a", chunk)
		if err != nil || n != int64(len(want)) {
			t.Fatalf("append %d = %d, %v; want size %d", i, n, err, len(want))
		}
	}
	if n, err := j.AppendJournal(ctx, "run_a", nil); err != nil || n != int64(len(want)) {
		t.Fatalf("empty append = %d, %v; want the size %d unchanged", n, err, len(want))
	}
	if n, err := j.JournalSize(ctx, "run_a"); err != nil || n != int64(len(want)) {
		t.Fatalf("size = %d, %v; want %d", n, err, len(want))
	}
	got, err := j.ReadJournal(ctx, "run_a", 0, 1<<20)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read = %q, %v; want %q", got, err, want)
	}
	if b, err := j.ReadJournal(ctx, "run_a", int64(len(want)), 1<<10); err != nil || len(b) != 0 {
		t.Fatalf("read at the end = %q, %v; want nothing", b, err)
	}
	if b, err := j.ReadJournal(ctx, "run_a", int64(len(want))+100, 1<<10); err != nil || len(b) != 0 {
		t.Fatalf("read past the end = %q, %v; want nothing", b, err)
	}
	if n, err := j.JournalSize(ctx, "run_b"); err != nil || n != 0 {
		t.Fatalf("another run's journal has %d bytes, %v", n, err)
	}
}

// testJournalOffsets reads a journal of uneven chunks from every offset
// with small and large limits: every read is the stream's bytes there.
func testJournalOffsets(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := journalsOf(s)
	var want []byte
	for i := range 12 {
		chunk := bytes.Repeat([]byte{byte('a' + i)}, 1+i*7)
		chunk = append(chunk, '\n')
		want = append(want, chunk...)
		if _, err := j.AppendJournal(ctx, "run_off", chunk); err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{1, 5, 64, 1 << 20} {
		for off := 0; off <= len(want); off++ {
			got, err := j.ReadJournal(ctx, "run_off", int64(off), limit)
			if err != nil {
				t.Fatal(err)
			}
			end := min(len(want), off+limit)
			if len(got) == 0 && off < len(want) || !bytes.Equal(got, want[off:off+len(got)]) || len(got) > limit || off+len(got) > end {
				t.Fatalf("read from %d, limit %d = %q; want a prefix of %q", off, limit, got, want[off:end])
			}
		}
	}
	// Paging through with a small limit yields the whole stream.
	var paged []byte
	for off := int64(0); ; {
		b, err := j.ReadJournal(ctx, "run_off", off, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			break
		}
		paged, off = append(paged, b...), off+int64(len(b))
	}
	if !bytes.Equal(paged, want) {
		t.Fatalf("paged read = %q; want %q", paged, want)
	}
}

// testJournalConcurrent appends from many goroutines at once: every chunk
// is there once, whole, and the size is their sum.
func testJournalConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := journalsOf(s)
	const writers, each = 8, 20
	concurrently(t, writers, func(w int) error {
		for i := range each {
			if _, err := j.AppendJournal(ctx, "run_many", fmt.Appendf(nil, "w%d-%03d\n", w, i)); err != nil {
				return err
			}
		}
		return nil
	})
	got, err := j.ReadJournal(ctx, "run_many", 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(got, []byte("\n")), []byte("\n"))
	if len(lines) != writers*each {
		t.Fatalf("%d lines; want %d:\n%s", len(lines), writers*each, got)
	}
	next := make([]int, writers)
	for _, l := range lines {
		var w, i int
		if _, err := fmt.Sscanf(string(l), "w%d-%03d", &w, &i); err != nil || w < 0 || w >= writers || i != next[w] {
			t.Fatalf("line %q out of order or torn (next of writer %d: %d)", l, w, next[max(0, min(w, writers-1))])
		}
		next[w]++
	}
	if n, err := j.JournalSize(ctx, "run_many"); err != nil || n != int64(len(got)) {
		t.Fatalf("size = %d, %v; want %d", n, err, len(got))
	}
}

func testJournalDeleteStale(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := journalsOf(s)
	// run_kept exists: its journal is not an orphan, and is never listed
	// (however many of them, they cannot push the orphans past a limit).
	mustCreate(t, s, &store.Run{ID: "run_kept", Status: store.RunSucceeded, CreatedAt: t0, FinishedAt: t0})
	for _, id := range []string{"run_kept", "run_old1", "run_old2"} {
		if _, err := j.AppendJournal(ctx, id, []byte("{}\n")); err != nil {
			t.Fatal(err)
		}
	}
	cut := time.Now().Add(time.Second)
	if stale, err := j.StaleJournals(ctx, time.Now().Add(-time.Hour), 10); err != nil || len(stale) != 0 {
		t.Fatalf("stale before an hour ago = %v, %v; want none", stale, err)
	}
	stale, err := j.StaleJournals(ctx, cut, 10)
	slices.Sort(stale)
	if err != nil || !slices.Equal(stale, []string{"run_old1", "run_old2"}) {
		t.Fatalf("stale = %v, %v; want both journals", stale, err)
	}
	if stale, err := j.StaleJournals(ctx, cut, 1); err != nil || len(stale) != 1 {
		t.Fatalf("stale with limit 1 = %v, %v", stale, err)
	}
	n, err := j.DeleteJournal(ctx, "run_old1")
	if err != nil || n != 3 {
		t.Fatalf("delete = %d, %v; want the 3 bytes it held", n, err)
	}
	if n, err := j.DeleteJournal(ctx, "run_old1"); err != nil || n != 0 {
		t.Fatalf("delete again = %d, %v; want 0", n, err)
	}
	if n, err := j.JournalSize(ctx, "run_old1"); err != nil || n != 0 {
		t.Fatalf("size after delete = %d, %v", n, err)
	}
	if stale, err := j.StaleJournals(ctx, cut, 10); err != nil || !slices.Equal(stale, []string{"run_old2"}) {
		t.Fatalf("stale after delete = %v, %v", stale, err)
	}
	// A deleted journal starts again from nothing.
	if n, err := j.AppendJournal(ctx, "run_old1", []byte("x\n")); err != nil || n != 2 {
		t.Fatalf("append after delete = %d, %v; want 2", n, err)
	}
}

func testJournalBadInput(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := journalsOf(s)
	if _, err := j.AppendJournal(ctx, "../etc", []byte("x\n")); err == nil {
		t.Fatal("an invalid run id was accepted")
	}
	if _, err := j.AppendJournal(ctx, "run_big", make([]byte, store.MaxJournalChunk+1)); err == nil {
		t.Fatal("a chunk over MaxJournalChunk was accepted")
	}
	if n, err := j.JournalSize(ctx, "run_big"); err != nil || n != 0 {
		t.Fatalf("a refused chunk left %d bytes, %v", n, err)
	}
}
