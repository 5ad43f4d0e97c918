package host

import (
	"os"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// A started host is a live peer until it stops.
func TestStartedHostIsALivePeer(t *testing.T) {
	t.Parallel()
	cfg := setup(t, "")
	cfg.Write = true
	h := open(t, cfg)
	ps := h.Store.(store.PeerStore)
	if err := h.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, err := ps.LivePeers(t.Context(), time.Now(), 10)
	if err != nil || len(got) != 1 || got[0].PID != os.Getpid() || got[0].Since.IsZero() {
		t.Fatalf("live peers of a started host: %+v, %v", got, err)
	}
	if host, _ := os.Hostname(); got[0].Hostname != host {
		t.Fatalf("peer hostname %q, want %q", got[0].Hostname, host)
	}
	h.Stop()
	if got, err := ps.LivePeers(t.Context(), time.Now(), 10); err != nil || len(got) != 0 {
		t.Fatalf("live peers after Stop: %+v, %v", got, err)
	}
}
