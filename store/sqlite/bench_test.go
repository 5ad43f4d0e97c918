package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn/store"
)

// BenchmarkCreateRun measures group-committed writes from 16 goroutines at
// both durability settings.
func BenchmarkCreateRun(b *testing.B) {
	for _, sync := range []string{"FULL", "NORMAL"} {
		b.Run(sync, func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "state.sqlite3"), Options{Synchronous: sync})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(8) // 16 writers on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := fmt.Sprintf("run_%d", n.Add(1))
					if err := s.CreateRun(ctx, &store.Run{ID: id, Target: "t", Literals: []byte(`{}`)}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
