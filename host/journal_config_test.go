package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/runs"
)

func TestJournalCapsReachTheEngine(t *testing.T) {
	t.Parallel()
	cfg := setup(t, "journal:\n  per_run: 1MiB\n  per_line: 100\n")
	cfg.Write = true
	long := "name: long\nsteps:\n  - id: l\n    shell: head -c 1000 /dev/zero | tr '\\0' z\n"
	if err := os.WriteFile(filepath.Join(cfg.Workspace, ".cairn", "workflows", "long.yaml"), []byte(long), 0o600); err != nil {
		t.Fatal(err)
	}
	h := open(t, cfg)
	if j := h.Settings.Journal; j.PerRun != 1<<20 || j.PerLine != 100 {
		t.Fatalf("journal settings %+v", j)
	}
	ctx := context.Background()
	r, err := h.Runs.Launch(ctx, runs.LaunchParams{Target: "long"})
	if err != nil {
		t.Fatal(err)
	}
	var cut *runs.Record
	if _, err := h.Runs.Watch(ctx, r.ID, runs.WatchParams{OnRecord: func(rec runs.Record) error {
		if rec.Type == runs.RecordText {
			cut = &rec
		}
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	if cut == nil || cut.Dropped != 900 || !strings.HasPrefix(cut.Text, strings.Repeat("z", 100)+" ") {
		t.Fatalf("the line: %+v, want it cut at 100 bytes", cut)
	}
}

func TestJournalSizes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]ByteSize{"4096": 4096, "64KiB": 64 << 10, "16 MiB": 16 << 20, "1GiB": 1 << 30, "2MB": 2e6, "5000B": 5000} {
		h := open(t, setup(t, "journal:\n  per_run: "+in+"\n"))
		if got := h.Settings.Journal.PerRun; got != want {
			t.Fatalf("per_run %q = %d, want %d", in, got, want)
		}
	}
	for name, tc := range map[string]struct{ config, want string }{
		"not a size":     {"journal:\n  per_run: lots\n", `"lots" is not a size`},
		"negative":       {"journal:\n  per_line: -5\n", "is not a size"},
		"small run cap":  {"journal:\n  per_run: 100\n", "journal.per_run is 100 bytes"},
		"small line cap": {"journal:\n  per_line: 10\n", "journal.per_line is 10 bytes"},
		"line over run":  {"journal:\n  per_run: 8KiB\n  per_line: 16KiB\n", "larger than journal.per_run"},
		"unknown key":    {"journal:\n  per_step: 1\n", "field per_step not found"},
	} {
		_, err := Open(context.Background(), setup(t, tc.config))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: err = %v, want it to mention %q", name, err, tc.want)
		}
	}
}
