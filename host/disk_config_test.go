package host

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/diskfree"
	"github.com/cairnhq/cairn/runs"
)

func TestDiskMinFreeSettings(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]MinFree{
		"2%": {Percent: 2}, "0.5 %": {Percent: 0.5}, "500MiB": {Bytes: 500 << 20}, "1GB": {Bytes: 1e9}, "1048576": {Bytes: 1 << 20},
	} {
		h := open(t, setup(t, "disk:\n  min_free: "+in+"\n"))
		if got := h.Settings.Disk.MinFree; got != want {
			t.Fatalf("min_free %q = %+v, want %+v", in, got, want)
		}
	}
	for name, tc := range map[string]struct{ config, want string }{
		"not a size":    {"disk:\n  min_free: lots\n", `"lots" is not a size`},
		"not a percent": {"disk:\n  min_free: x%\n", `"x%" is not a percent`},
		"huge percent":  {"disk:\n  min_free: 90%\n", "disk.min_free is 90%"},
		"tiny size":     {"disk:\n  min_free: 10KiB\n", "disk.min_free is 10240 bytes"},
		"unknown key":   {"disk:\n  min_used: 1\n", "field min_used not found"},
	} {
		_, err := Open(context.Background(), setup(t, tc.config))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: err = %v, want it to mention %q", name, err, tc.want)
		}
	}
}

// TestDiskMinFreeReachesTheGuard: a threshold larger than any disk
// refuses a launch, so the key is what the guard checks.
func TestDiskMinFreeReachesTheGuard(t *testing.T) {
	t.Parallel()
	cfg := setup(t, "disk:\n  min_free: 1000000GB\n")
	cfg.Write = true
	h := open(t, cfg)
	_, err := h.Runs.Launch(context.Background(), runs.LaunchParams{Target: "hello"})
	var low *diskfree.LowError
	if !errors.Is(err, diskfree.ErrLow) || !errors.As(err, &low) || low.Threshold != 1e15 {
		t.Fatalf("launch = %v, want it refused at a 1e15-byte threshold", err)
	}
}
