package mcp

import (
	"testing"

	"github.com/cairnhq/cairn/store/memory"
)

// TestRunsServiceBringsItsStore checks the old way to pass the run engine:
// its store becomes the one subscriptions poll.
func TestRunsServiceBringsItsStore(t *testing.T) {
	t.Parallel()
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	srv := New(Params{Runs: RunsService(RunsParams{Store: st}), Sessions: SessionsService(nil), Automations: AutomationsService(nil)})
	if srv.p.RunStore == nil {
		t.Fatal("Params.RunStore not taken from RunsService")
	}
	if got := srv.p.RunStore.(engineWithStore).RunStore; got != st {
		t.Errorf("RunStore is %v, want the engine's store", got)
	}
}
