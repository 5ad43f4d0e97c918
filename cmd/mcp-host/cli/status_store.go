package cli

import (
	"context"
	"path/filepath"
	"slices"
	"time"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/workspace"
)

// storeRead fills a workspace's status from its store.
type storeRead func(ctx context.Context, p string, st *workspaceStatus) error

// sharedRead names a workspace's store in st and returns how to read it:
// read for its SQLite file, or a read of the PostgreSQL store its config
// (or CAIRN_DATABASE_URL) selects, after syncing the current workspace's
// triggers as readSyncedStore does. A config that cannot be read leaves
// read as it is.
func (e *env) sharedRead(info workspace.Info, dir string, st *workspaceStatus, read storeRead) storeRead {
	st.Store = "sqlite " + filepath.Join(dir, "state.sqlite3")
	s, err := host.LoadSettings(&workspace.Workspace{Root: info.Root})
	if err != nil {
		return read
	}
	sh, err := s.Shared()
	if err != nil {
		st.Store = "postgres (" + err.Error() + ")"
		return func(context.Context, string, *workspaceStatus) error { return nil }
	}
	if sh == nil {
		return read
	}
	st.Store = sh.Describe() + " (workspace " + sh.WorkspaceID + ")"
	return func(ctx context.Context, _ string, st *workspaceStatus) error {
		if st.Here {
			if err := e.withHost(ctx, false, func(h *host.Host) error { e.listingSync(ctx, h); return nil }); err != nil {
				return err
			}
		}
		return readShared(ctx, sh, dir, st)
	}
}

// withSharedHere adds the current workspace to infos when its store is
// shared and this machine has not run anything of it yet: its runs,
// automations and peers are in the database, not in the state root's
// registry.
func withSharedHere(infos []workspace.Info, ws *workspace.Workspace) []workspace.Info {
	if slices.ContainsFunc(infos, func(i workspace.Info) bool { return i.ID == ws.ID }) {
		return infos
	}
	if s, err := host.LoadSettings(ws); err != nil || s.WorkspaceID == "" {
		return infos
	} else if sh, err := s.Shared(); err != nil || sh == nil {
		return infos
	}
	return append(infos, workspace.Info{ID: ws.ID, Root: ws.Root})
}

// readShared fills st from a PostgreSQL store, as readStore does from a
// SQLite file.
func readShared(ctx context.Context, sh *host.SharedStore, dir string, st *workspaceStatus) error {
	st.Schedules, st.Stalled, st.Peers = []automations.Summary{}, []runs.StalledRun{}, []store.Peer{}
	s, err := postgres.Open(ctx, postgres.Config{URL: sh.URL, WorkspaceID: sh.WorkspaceID, MaxConns: 2})
	if err != nil {
		return sh.RedactError(err)
	}
	defer s.Close()
	locksDir := filepath.Join(dir, "locks")
	st.Scheduler = describeDuty(ctx, locksDir, "scheduler", s, st.Scheduler)
	st.Worker = describeDuty(ctx, locksDir, "worker", s, st.Worker)
	if st.Peers, err = s.LivePeers(ctx, time.Now(), maxPeersShown); err != nil {
		return err
	}
	if st.Counts, err = s.Counts(ctx); err != nil {
		return err
	}
	if st.Schedules, err = automations.Summaries(ctx, s, time.Now()); err != nil {
		return err
	}
	st.Stalled, err = runs.Stalled(ctx, s, locksDir, maxStalledShown)
	return err
}
