package host

import (
	"strings"
	"testing"

	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store/memory"
)

// sharedStore stands for a store shared by several machines.
type sharedStore struct{ *memory.Store }

func (sharedStore) Shared() bool { return true }

func TestCoordinationMode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		shared bool
		file   string
		cfg    string
		want   string
	}{
		{"one machine", false, "", "", runs.CoordinationLocks},
		{"a shared store", true, "", "", runs.CoordinationLeases},
		{"the config file", false, runs.CoordinationLeases, "", runs.CoordinationLeases},
		{"Config wins", true, runs.CoordinationLeases, runs.CoordinationLocks, runs.CoordinationLocks},
	} {
		h := &Host{Store: memory.New()}
		if tc.shared {
			h.Store = sharedStore{memory.New()}
		}
		h.Settings.Coordination.Mode = tc.file
		if got := h.coordination(Config{Coordination: tc.cfg}); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Leases mode on SQLite: the run engine, the duties and the peer
// registration follow it; bad settings are refused with what to write.
func TestCoordinationSettings(t *testing.T) {
	t.Parallel()
	cfg := setup(t, "coordination:\n  mode: leases\n  lease: 3s\n  renew: 500ms\n")
	cfg.Write = true
	h := open(t, cfg)
	if !h.Leases() {
		t.Fatal("coordination.mode leases did not select leases")
	}
	if got := h.dutyLease(); got.Seconds() != 3 {
		t.Fatalf("duty lease %s, want 3s", got)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"coordination:\n  mode: flock\n", "coordination.mode"},
		{"coordination:\n  lease: 100ms\n", "at least 300ms"},
		{"coordination:\n  lease: 2s\n  renew: 1s\n", "three times"},
	} {
		c := setup(t, bad.yaml)
		if _, err := Open(t.Context(), c); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error naming %q", bad.yaml, err, bad.want)
		}
	}
}
