package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn/store"
)

// benchParallel runs op with a fresh run id from 16 goroutines (on 2
// cores), on a new store, at both durability settings.
func benchParallel(b *testing.B, op func(ctx context.Context, s *Store, id string) error) {
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
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := op(ctx, s, fmt.Sprintf("run_%d", n.Add(1))); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkCreateRun measures group-committed writes from 16 goroutines at
// both durability settings.
func BenchmarkCreateRun(b *testing.B) {
	benchParallel(b, func(ctx context.Context, s *Store, id string) error {
		return s.CreateRun(ctx, &store.Run{ID: id, Target: "t", Literals: []byte(`{}`)})
	})
}

// BenchmarkOpen measures opening an existing store and closing it, the cost
// every test that uses a fresh store pays.
func BenchmarkOpen(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "state.sqlite3")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	b.ReportAllocs()
	for b.Loop() {
		s, err := Open(ctx, path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
