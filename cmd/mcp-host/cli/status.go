package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/internal/diskfree"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/workspace"
)

// lockStatus is who holds one of a workspace's long-lived locks.
type lockStatus struct {
	Running bool      `json:"running"`
	PID     int       `json:"pid,omitempty"`
	Since   time.Time `json:"since,omitzero"`
	Holder  string    `json:"holder"` // "pid N since T" or "not running"
}

type workspaceStatus struct {
	ID        string                `json:"id"`
	Root      string                `json:"root"`
	Here      bool                  `json:"here"`
	LastSeen  time.Time             `json:"last_seen"`
	Scheduler lockStatus            `json:"scheduler"`
	Worker    lockStatus            `json:"worker"`
	Counts    store.Counts          `json:"counts"`
	Schedules []automations.Summary `json:"schedules"`
	Error     string                `json:"error,omitempty"`
	Disk      string                `json:"disk,omitempty"` // why writes are refused: the state disk is (nearly) full
}

type statusReport struct {
	StateRoot  string            `json:"state_root"`
	Workspaces []workspaceStatus `json:"workspaces"`
}

func (e *env) statusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show every workspace under the state root: who runs it and what it holds",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := e.status(cmd.Context())
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(rep)
			}
			if len(rep.Workspaces) == 0 {
				e.printf("no workspaces under %s\n", rep.StateRoot)
				return nil
			}
			for i, w := range rep.Workspaces {
				if i > 0 {
					e.printf("\n")
				}
				here := ""
				if w.Here {
					here = " (here)"
				}
				e.printf("%s%s\n", w.Root, here)
				e.printf("  id          %s\n", w.ID)
				e.printf("  last seen   %s\n", w.LastSeen.Local().Format(time.DateTime))
				e.printf("  scheduler   %s\n", w.Scheduler.Holder)
				e.printf("  worker      %s\n", w.Worker.Holder)
				e.printf("  runs %d · automations %d · sessions %d\n", w.Counts.Runs, w.Counts.Automations, w.Counts.Sessions)
				for _, a := range w.Schedules {
					e.printf("  %s\n", scheduleLine(a))
				}
				if w.Disk != "" {
					e.printf("  state disk  %s\n", w.Disk)
				}
				if w.Error != "" {
					e.printf("  error       %s\n", w.Error)
				}
			}
			return nil
		},
	}
}

// status reads every workspace under the state root without changing any.
func (e *env) status(ctx context.Context) (statusReport, error) {
	root, err := e.stateRoot()
	if err != nil {
		return statusReport{}, err
	}
	rep := statusReport{StateRoot: root, Workspaces: []workspaceStatus{}}
	infos, err := workspace.List(root)
	if err != nil {
		return rep, err
	}
	var hereID string
	if ws, err := e.workspace(); err == nil {
		hereID = ws.ID
	}
	for _, info := range infos {
		dir := filepath.Join(root, info.ID)
		st := workspaceStatus{ID: info.ID, Root: info.Root, Here: info.ID == hereID, LastSeen: info.LastSeen}
		st.Scheduler = describeLock(filepath.Join(dir, "locks"), "scheduler")
		st.Worker = describeLock(filepath.Join(dir, "locks"), "worker")
		if err := (&diskfree.Guard{Path: dir}).Check(); err != nil {
			st.Disk = err.Error()
		}
		if err := readStore(ctx, filepath.Join(dir, "state.sqlite3"), &st); err != nil {
			st.Error = err.Error()
		}
		rep.Workspaces = append(rep.Workspaces, st)
	}
	return rep, nil
}

func describeLock(dir, name string) lockStatus {
	if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
		return lockStatus{Holder: "not running"}
	}
	h, held, err := locks.Describe(dir, name)
	if err != nil {
		return lockStatus{Holder: "unknown: " + err.Error()}
	}
	if !held {
		return lockStatus{Holder: "not running"}
	}
	return lockStatus{Running: true, PID: h.PID, Since: h.Since, Holder: h.String()}
}

// readStore fills st's counts and schedules from a workspace's database,
// opened read-only.
func readStore(ctx context.Context, p string, st *workspaceStatus) error {
	st.Schedules = []automations.Summary{}
	if _, err := os.Lstat(p); err != nil {
		return nil
	}
	s, err := sqlite.Open(ctx, p, sqlite.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer s.Close()
	if st.Counts, err = s.Counts(ctx); err != nil {
		return err
	}
	st.Schedules, err = automations.Summaries(ctx, s)
	return err
}

// scheduleLine is one automation as status and list print it:
// key, schedule, target, last and next times.
func scheduleLine(a automations.Summary) string {
	when := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.Local().Format(time.DateTime)
	}
	state := "next " + when(a.NextDue)
	if !a.Enabled {
		state = "paused"
		if a.Note != "" {
			state += " (" + a.Note + ")"
		}
	}
	last := "last " + when(a.LastStart)
	if a.LastStatus != "" {
		last += " " + a.LastStatus
	}
	return fmt.Sprintf("%-24s %-22s → %s · %s · %s", a.Key, a.Schedule, a.Target, last, state)
}
