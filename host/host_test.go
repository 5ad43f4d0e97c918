package host

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/sqlite"
)

const hello = "name: hello\nsteps:\n  - id: greet\n    exec: [\"echo\", \"hi\"]\n"

// setup makes a workspace with one workflow and an empty state root.
func setup(t *testing.T, config string) Config {
	t.Helper()
	ws := t.TempDir()
	wf := filepath.Join(ws, ".cairn", "workflows")
	if err := os.MkdirAll(wf, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wf, "hello.yaml"), []byte(hello), 0o600); err != nil {
		t.Fatal(err)
	}
	if config != "" {
		if err := os.WriteFile(filepath.Join(ws, ".cairn", ConfigFile), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return Config{StateRoot: filepath.Join(t.TempDir(), "state"), Workspace: ws}
}

func open(t *testing.T, cfg Config) *Host {
	t.Helper()
	h, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func stateFiles(t *testing.T, root string) []string {
	t.Helper()
	var got []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			got = append(got, p)
		}
		return nil
	})
	return got
}

func TestOpenPicksTheBackend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		dryRun, write  bool
		wantMemory     bool
		wantStateFiles bool
	}{
		{"read-only without state", false, false, true, false},
		{"dry run", true, true, true, false},
		{"write", false, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := setup(t, "")
			cfg.DryRun, cfg.Write = tc.dryRun, tc.write
			h := open(t, cfg)
			if _, ok := h.Store.(*memory.Store); ok != tc.wantMemory || h.InMemory() != tc.wantMemory {
				t.Fatalf("store %T, InMemory %v; want memory %v", h.Store, h.InMemory(), tc.wantMemory)
			}
			if !tc.wantMemory {
				if _, ok := h.Store.(*sqlite.Store); !ok {
					t.Fatalf("store %T, want SQLite", h.Store)
				}
			}
			ctx := context.Background()
			if err := h.Start(ctx); err != nil {
				t.Fatal(err)
			}
			r, err := h.Runs.Launch(ctx, runs.LaunchParams{Target: "hello"})
			if err != nil {
				t.Fatal(err)
			}
			if r, err = h.Runs.WaitSettledOrParked(ctx, r.ID); err != nil || r.Status != "succeeded" {
				t.Fatalf("run: %v %v", r, err)
			}
			if _, _, err := h.Sessions.Create(ctx, sessions.CreateParams{ID: "ses_a"}); err != nil {
				t.Fatal(err)
			}
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			if got := stateFiles(t, cfg.StateRoot); (len(got) > 0) != tc.wantStateFiles {
				t.Fatalf("files under the state root: %v; want some: %v", got, tc.wantStateFiles)
			}
			if h.scratch != "" {
				if _, err := os.Stat(h.scratch); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("Close left the scratch folder %s: %v", h.scratch, err)
				}
			}
		})
	}
}

func TestOpenReadsTheConfigOnce(t *testing.T) {
	t.Parallel()
	h := open(t, setup(t, "sessions:\n  max_archives: 2\n"))
	if n := h.Settings.Sessions.MaxArchives; n == nil || *n != 2 {
		t.Fatalf("sessions.max_archives = %v, want 2", n)
	}
	override := 0
	cfg := setup(t, "sessions:\n  max_archives: 2\n")
	cfg.MaxArchives = &override
	if n := open(t, cfg).Settings.Sessions.MaxArchives; n == nil || *n != 0 {
		t.Fatalf("with an override: %v, want 0", n)
	}
	if h := open(t, setup(t, "")); h.Settings.Sessions.MaxArchives != nil {
		t.Fatalf("no config: %v, want the default", h.Settings.Sessions.MaxArchives)
	}
}

func TestOpenRefusesABadConfig(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ config, want string }{
		"unknown key": {"sesions:\n  max_archives: 2\n", "field sesions not found"},
		"negative":    {"sessions:\n  max_archives: -1\n", "sessions.max_archives is -1"},
		"not yaml":    {"sessions: [\n", "config.yaml"},
		"wrong type":  {"sessions:\n  max_archives: many\n", "line 2"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := setup(t, tc.config)
			cfg.Write = true
			_, err := Open(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
			if got := stateFiles(t, cfg.StateRoot); len(got) > 0 {
				t.Fatalf("a refused config still wrote %v", got)
			}
		})
	}
}

func TestStartStopCloseAreIdempotent(t *testing.T) {
	t.Parallel()
	cfg := setup(t, "")
	cfg.Write = true
	h := open(t, cfg)
	ctx := context.Background()
	for range 2 {
		if err := h.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	h.Stop()
	h.Stop()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := h.Start(ctx); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}
