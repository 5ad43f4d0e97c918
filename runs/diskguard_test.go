package runs

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/diskfree"
	"github.com/cairnhq/cairn/store"
)

// TestLaunchRefusedWhenTheDiskIsFull: with the state disk nearly full,
// Launch stores nothing and says how much is free; once space is back, it
// launches again.
func TestLaunchRefusedWhenTheDiskIsFull(t *testing.T) {
	t.Parallel()
	free := uint64(50 << 20)
	guard := &diskfree.Guard{Measure: func(string) (diskfree.Space, error) {
		return diskfree.Space{Free: free, Total: 100 << 30}, nil
	}}
	te := setup(t, map[string]string{"hello.yaml": helloYAML}, func(o *Options) {
		guard.Path = o.Workspace.StateDir
		o.DiskGuard = guard
	})
	_, err := te.e.Launch(te.ctx, LaunchParams{Target: "hello"})
	var low *diskfree.LowError
	if !errors.As(err, &low) || !strings.Contains(err.Error(), "the state disk has 50 MB free") {
		t.Fatalf("Launch on a full disk: err = %v, want a *diskfree.LowError with 50 MB free", err)
	}
	runs, _, err := te.st.ListRuns(te.ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 0 {
		t.Fatalf("a refused launch stored %d runs", len(runs))
	}
	free = 10 << 30
	r := te.launch("hello", `{}`) // fails the test on an error
	te.wait(te.e, r.ID)
}
