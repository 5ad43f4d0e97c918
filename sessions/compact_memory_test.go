package sessions_test

import (
	"bufio"
	"context"
	"database/sql"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/reexec"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
)

// TestCompactStreamsALongSession compacts a session of 100,000 messages
// (20,000 under the race detector, which slows SQLite tenfold; 400,000
// under CAIRN_SOAK) in a real SQLite store. Memory must not grow with the
// session: the Go heap grows by less than flatHeap whatever the size
// (holding 20,000 such messages and their frozen JSON took more), and
// without the race detector RSS by less than 50 MB. Not parallel, so that
// no other test's memory is counted.
func TestCompactStreamsALongSession(t *testing.T) {
	const flatHeap = 16 << 20
	n := reexec.Soak(100_000, 400_000)
	if raceEnabled { // 400,000 run without it: .ci/run
		n = min(n/4, 20_000*reexec.Soak(1, 5))
	}
	ctx := context.Background()
	f := setup(t, sessions.Options{})
	f.create(t, "ses_big")
	bulkMessages(t, f.db, "ses_big", n)

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	resetPeakRSS()
	rssBefore := procStatus("VmRSS")
	peak, start := sampleHeap(), time.Now()
	res, err := f.m.Compact(ctx, sessions.CompactParams{SessionID: "ses_big", Summary: "all of it", KeepLast: intp(10)})
	heapPeak := peak()
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	rssGrowth := procStatus("VmHWM") - rssBefore
	heapGrowth := int64(heapPeak) - int64(base.HeapInuse)
	t.Logf("compacted %d messages in %v: Go heap grew %.1f MB at its peak, RSS %.1f MB", n, took.Round(time.Millisecond), float64(heapGrowth)/(1<<20), float64(rssGrowth)/(1<<20))
	if res.Compacted != int64(n-10) || res.Archive.MessageCount != int64(n) {
		t.Fatalf("compacted %d, archive holds %d; want %d and %d", res.Compacted, res.Archive.MessageCount, n-10, n)
	}
	if heapGrowth > flatHeap {
		t.Errorf("the Go heap grew by %d MB compacting %d messages, want under %d MB", heapGrowth>>20, n, flatHeap>>20)
	}
	if !raceEnabled && rssGrowth > 50<<20 { // the race detector's shadow memory is RSS too
		t.Errorf("RSS grew by %d MB compacting %d messages, want under 50 MB", rssGrowth>>20, n)
	}
	msgs, err := f.st.ListMessages(ctx, store.ListMessagesParams{SessionID: "ses_big", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 11 || msgs[10].Seq != int64(n) {
		t.Fatalf("%d messages after compaction, want the summary and the last 10", len(msgs))
	}
}

// bulkMessages inserts n messages of about 150 bytes into session id with
// one statement, far faster than n appends.
func bulkMessages(t *testing.T, dbPath, id string, n int) {
	t.Helper()
	db, err := sql.Open("sqlite", dbPath+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const q = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?)
INSERT INTO session_messages (session_id, seq, id, role, parts, metadata, created_at)
SELECT ?, i, 'msg_' || i, 'user', '[{"type":"text","text":"message ' || i || ' ' || hex(randomblob(40)) || '"}]', '{}', 1772452800000 + i FROM c`
	if _, err := db.Exec(q, n, id); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE sessions SET message_count = ?, last_seq = ?, revision = revision + 1 WHERE id = ?", n, n, id); err != nil {
		t.Fatal(err)
	}
}

// sampleHeap samples HeapInuse every few milliseconds until the returned
// func is called, which returns the highest value seen.
func sampleHeap() (stop func() uint64) {
	var (
		mu   sync.Mutex
		high uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mu.Lock()
		high = max(high, ms.HeapInuse)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		sample()
		mu.Lock()
		defer mu.Unlock()
		return high
	}
}

// resetPeakRSS resets VmHWM to the current RSS (Linux); elsewhere nothing.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// procStatus returns a /proc/self/status field in bytes, 0 when unknown.
func procStatus(field string) int64 {
	fh, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}
