package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/internal/diskfree"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/runs"
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
	// StalledPID holds the duty (its lock or lease) without making
	// progress since Progress (zero: unknown); see locks.DescribeDuty.
	StalledPID int       `json:"stalled_pid,omitempty"`
	Progress   time.Time `json:"progress,omitzero"`
}

type workspaceStatus struct {
	ID        string                `json:"id"`
	Root      string                `json:"root"`
	Here      bool                  `json:"here"`
	LastSeen  time.Time             `json:"last_seen"`
	Store     string                `json:"store"` // "sqlite PATH" or "postgres USER@HOST:PORT/DATABASE (workspace ID)"
	Scheduler lockStatus            `json:"scheduler"`
	Worker    lockStatus            `json:"worker"`
	Counts    store.Counts          `json:"counts"`
	Schedules []automations.Summary `json:"schedules"`
	// Stalled are the runs nobody executes (owner gone, or queued).
	Stalled []runs.StalledRun `json:"stalled"`
	Error   string            `json:"error,omitempty"`
	Disk    string            `json:"disk,omitempty"` // why writes are refused: the state disk is (nearly) full

	// Peers are the live host processes (serve, worker) of every machine
	// that registered in the store (status_peers.go).
	Peers []store.Peer `json:"peers"`
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
				e.printf("  store       %s\n", w.Store)
				if w.LastSeen.IsZero() {
					e.printf("  last seen   never on this machine\n") // a shared workspace's (status_store.go)
				} else {
					e.printf("  last seen   %s\n", w.LastSeen.Local().Format(time.DateTime))
				}
				e.printf("  scheduler   %s\n", w.Scheduler.Holder)
				e.printf("  worker      %s\n", w.Worker.Holder)
				if w.Worker.Running {
					e.printf("              stop it: mcp-host worker stop --workspace %s\n", w.Root)
				}
				e.printPeers(w.Peers)
				e.printf("  runs %d · automations %d · sessions %d\n", w.Counts.Runs, w.Counts.Automations, w.Counts.Sessions)
				for _, a := range w.Schedules {
					e.printf("  %s\n", scheduleLine(a))
				}
				for _, r := range w.Stalled {
					e.printf("  run %s (%s) %s: %s\n", r.ID, r.Target, r.Status, r.Note)
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

// status reads every workspace under the state root without changing any,
// except that the current workspace's workflow triggers are synced first.
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
		infos = withSharedHere(infos, ws)
	}
	for _, info := range infos {
		dir := filepath.Join(root, info.ID)
		st := workspaceStatus{ID: info.ID, Root: info.Root, Here: info.ID == hereID, LastSeen: info.LastSeen}
		st.Scheduler = describeLock(filepath.Join(dir, "locks"), "scheduler")
		st.Worker = describeLock(filepath.Join(dir, "locks"), "worker")
		if err := (&diskfree.Guard{Path: dir}).Check(); err != nil {
			st.Disk = err.Error()
		}
		read := readStore
		if st.Here {
			read = e.readSyncedStore // this workspace's files are at hand: sync their triggers
		}
		read = e.sharedRead(info, dir, &st, read)
		if err := read(ctx, filepath.Join(dir, "state.sqlite3"), &st); err != nil {
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

// describeDuty is lockStatus with what the duty's lease tells: who does
// it when a peer took it over, and whether its holder makes progress. It
// returns ls (the lock file alone) when the lease cannot be read.
func describeDuty(ctx context.Context, dir, name string, leases store.LeaseStore, ls lockStatus) lockStatus {
	d, err := locks.DescribeDuty(ctx, dir, name, leases, time.Now())
	if err != nil || d.Doer == 0 || (d.StalledPID == 0 && d.Locked && d.Lock.PID == d.Doer) {
		return ls
	}
	out := lockStatus{Running: true, PID: d.Doer, StalledPID: d.StalledPID, Progress: d.Progress}
	since := "since " + d.Progress.Local().Format(time.DateTime)
	if d.Progress.IsZero() {
		since = "for a while"
	}
	switch {
	case d.StalledPID == d.Doer:
		out.Since = d.Lock.Since
		out.Holder = fmt.Sprintf("pid %d holds the %s lock but has not made progress %s", d.Doer, name, since)
	case d.Lease != nil && d.Lease.PID == d.Doer:
		out.Since = d.Lease.Since
		out.Holder = fmt.Sprintf("pid %d since %s", d.Doer, d.Lease.Since.UTC().Format(time.RFC3339))
		if d.StalledPID != 0 {
			out.Holder += fmt.Sprintf(" (took over: pid %d holds the %s lock but has not made progress)", d.StalledPID, name)
		}
	default:
		return ls
	}
	return out
}

// readStore fills st's counts and schedules from a workspace's database,
// opened read-only.
func readStore(ctx context.Context, p string, st *workspaceStatus) error {
	st.Schedules, st.Stalled, st.Peers = []automations.Summary{}, []runs.StalledRun{}, []store.Peer{}
	if _, err := os.Lstat(p); err != nil {
		return nil
	}
	s, err := sqlite.Open(ctx, p, sqlite.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer s.Close()
	locksDir := filepath.Join(filepath.Dir(p), "locks")
	st.Scheduler = describeDuty(ctx, locksDir, "scheduler", s, st.Scheduler)
	st.Worker = describeDuty(ctx, locksDir, "worker", s, st.Worker)
	if st.Peers, err = s.LivePeers(ctx, time.Now(), maxPeersShown); err != nil {
		return err
	}
	st.Peers = livePeers(st.Peers)
	if st.Counts, err = s.Counts(ctx); err != nil {
		return err
	}
	if st.Schedules, err = automations.Summaries(ctx, s, time.Now()); err != nil {
		return err
	}
	st.Stalled, err = runs.Stalled(ctx, s, filepath.Join(filepath.Dir(p), "locks"), maxStalledShown)
	return err
}

// maxStalledShown bounds the stalled runs status lists per workspace.
const maxStalledShown = 20

// readSyncedStore fills st as readStore does, for the current workspace,
// after syncing the `on:` triggers of its workflow files.
func (e *env) readSyncedStore(ctx context.Context, p string, st *workspaceStatus) error {
	if err := e.withHost(ctx, false, func(h *host.Host) error { e.listingSync(ctx, h); return nil }); err != nil {
		return err
	}
	return readStore(ctx, p, st)
}

// scheduleLine is one automation as status and list print it:
// key, schedule, target, last and next times.
func scheduleLine(a automations.Summary) string {
	when := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return summaryTime(t)
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
