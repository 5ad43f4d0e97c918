package runs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/workspace"
)

// BenchmarkLaunchToSettle measures one run from Launch until it is
// settled, one at a time, for a one-step workflow: a step that runs
// `true`, and a step that does nothing external (its condition is false,
// so the engine only records the skip). The in-memory engine is the peer
// that shows what the SQLite store and the journal files cost.
//
//	go test -run XXX -bench . -benchtime 200x ./runs/
func BenchmarkLaunchToSettle(b *testing.B) {
	files := map[string]string{
		"exec.yaml": "steps:\n  - id: noop\n    exec: [\"true\"]\n",
		"skip.yaml": "steps:\n  - id: noop\n    if: ${{ false }}\n    exec: [\"true\"]\n",
	}
	for _, c := range []struct {
		name, target string
		inMemory     bool
	}{
		{"sqlite/exec-true", "exec", false},
		{"sqlite/no-op", "skip", false},
		{"memory/exec-true", "exec", true},
		{"memory/no-op", "skip", true},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := benchEngine(b, files, c.inMemory)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				r, err := e.Launch(ctx, LaunchParams{Target: c.target})
				if err != nil {
					b.Fatal(err)
				}
				done, err := e.WaitSettledOrParked(ctx, r.ID)
				if err != nil || done.Status != store.RunSucceeded {
					b.Fatalf("run: %v %v", done, err)
				}
			}
		})
	}
}

func benchEngine(b *testing.B, files map[string]string, inMemory bool) *Engine {
	b.Helper()
	root := b.TempDir()
	dir := filepath.Join(root, ".cairn", "workflows")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	ws, err := workspace.Resolve(root, root, filepath.Join(b.TempDir(), "state"))
	if err != nil {
		b.Fatal(err)
	}
	var st store.Store = memory.New()
	if !inMemory {
		if err := ws.Prepare(); err != nil {
			b.Fatal(err)
		}
		s, err := sqlite.Open(context.Background(), ws.DBPath(), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		st = s
	}
	e, err := New(Options{Store: st, Workspace: ws, InMemory: inMemory})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		e.Stop()
		st.Close()
	})
	return e
}
