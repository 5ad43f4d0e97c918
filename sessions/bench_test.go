package sessions_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// benchSizes are the session sizes an append is measured at.
var benchSizes = []int{10, 100_000}

// benchManager opens a SQLite store (default settings: synchronous=FULL)
// with one session per size, each filled with that many messages.
func benchManager(b *testing.B) (*sessions.Manager, []string) {
	b.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "state.sqlite3"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	m := sessions.New(st, sessions.Options{})
	var ids []string
	for _, n := range benchSizes {
		id := fmt.Sprintf("ses_%d", n)
		if _, _, err := m.Create(ctx, sessions.CreateParams{ID: id}); err != nil {
			b.Fatal(err)
		}
		bulkAppend(b, m, id, n)
		ids = append(ids, id)
	}
	return m, ids
}

// bulkAppend adds n messages in appends of up to MaxAppendMessages.
func bulkAppend(b *testing.B, m *sessions.Manager, id string, n int) {
	b.Helper()
	batch := make([]sessions.MessageInput, 0, sessions.MaxAppendMessages)
	for i := range n {
		role := store.RoleUser
		if i%2 == 1 {
			role = store.RoleAssistant
		}
		batch = append(batch, sessions.TextMessage(role, fmt.Sprintf("message %d of the conversation so far", i)))
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := m.Append(context.Background(), id, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

var benchMsg = []sessions.MessageInput{sessions.TextMessage(store.RoleUser, "one more message, appended while the session grows")}

// BenchmarkAppend measures one append of one message to a session holding
// 10 and 100,000 messages.
func BenchmarkAppend(b *testing.B) {
	m, ids := benchManager(b)
	ctx := context.Background()
	for i, id := range ids {
		b.Run(fmt.Sprintf("at_%d", benchSizes[i]), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Append(ctx, id, benchMsg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendRatio interleaves appends to the small and the large
// session, so that both see the same machine, and reports the median time
// of each and their ratio (large/small; the goal is at most 1.2), and the
// ratio of the means (more sensitive to a noisy neighbour).
func BenchmarkAppendRatio(b *testing.B) {
	m, ids := benchManager(b)
	ctx := context.Background()
	times := [2][]time.Duration{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range 2 {
			which := (i + k) % 2 // alternate which goes first
			start := time.Now()
			if _, err := m.Append(ctx, ids[which], benchMsg); err != nil {
				b.Fatal(err)
			}
			times[which] = append(times[which], time.Since(start))
		}
	}
	b.StopTimer()
	small, large := median(times[0]), median(times[1])
	b.ReportMetric(float64(small.Nanoseconds()), "ns/append@10")
	b.ReportMetric(float64(large.Nanoseconds()), "ns/append@100k")
	b.ReportMetric(float64(large)/float64(small), "ratio")
	b.ReportMetric(float64(mean(times[1]))/float64(mean(times[0])), "mean-ratio")
}

func mean(d []time.Duration) time.Duration {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
