// Package host is Cairn's composition root, like river's Client: Open reads
// the workspace and its .cairn/config.yaml once and builds the running
// system (store, run engine, automations service and scheduler, session
// manager) with one clock and one logger; Start and Stop run its loops.
//
// serve is a host plus the MCP adapter, worker a started host with an idle
// loop, and one-shot commands open a host without starting it. A dry run
// is a choice of backends made here and nowhere else: the memory store,
// journals kept in memory and a private scratch folder for locks, so
// nothing is written under the state root.
package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/internal/diskfree"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/retention"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/workspace"
)

// Config says which workspace to open and how.
type Config struct {
	// StateRoot holds one state folder per workspace. Required.
	StateRoot string
	// Workspace is the workspace folder; empty: the nearest ancestor of
	// Dir holding .cairn/, else Dir.
	Workspace string
	// Dir is the working directory; empty: the process's.
	Dir string
	// DryRun keeps all state in memory: nothing is written under the
	// state root.
	DryRun bool
	// Write says the caller runs or changes something: the state folder
	// is created and workspace.json touched. Without it a workspace with
	// no state yet gets an empty memory store, so read-only commands leave
	// the state root as they found it.
	Write bool
	// ReadOnly opens the workspace's database read-only (gc --dry-run
	// reports on the real state and writes nothing); a workspace with no
	// state gets the memory store. DryRun wins over it.
	ReadOnly bool

	Clock  clock.Clock  // nil: the wall clock
	Logger *slog.Logger // nil: discard

	// MaxArchives, when set, overrides sessions.max_archives (a
	// command-line flag).
	MaxArchives *int
	// StopGrace is how long Stop lets a step in flight finish (see
	// runs.Options.StopGrace); zero: the engine's default.
	StopGrace time.Duration
	// OnRunChange is called after a run or its journal changed (see
	// runs.Options.OnChange).
	OnRunChange func(runID string)
	// Coordination, when set, overrides coordination.mode (see
	// CoordinationSettings): runs.CoordinationLocks or
	// runs.CoordinationLeases.
	Coordination string
}

// Host is the running system of one workspace. Its fields are ready after
// Open; the loops run between Start and Stop.
type Host struct {
	Workspace   *workspace.Workspace
	Settings    Settings
	Store       store.Store
	Runs        *runs.Engine
	Targets     *automations.WorkflowTargets
	Automations *automations.Service
	Scheduler   *automations.Scheduler
	Worker      *locks.Duty // the worker duty (locks/worker, its lease): mcp-host worker takes it
	Sessions    *sessions.Manager
	// Retention deletes runs past retention: by hand (mcp-host gc, runs
	// delete) and, between Start and Stop, every retention.interval.
	Retention *retention.Collector
	// Policy is what agents may do (the agents: settings); Audit records
	// what they did.
	Policy *access.Policy
	Audit  *audit.Log

	gc       *retention.Loop // nil when retention.interval is 0
	notifier *notifier       // nil when notify: sets no channel
	sup      *supervisor     // follows the store's health (health.go); nil for a store that cannot pause
	shared   *SharedStore    // the PostgreSQL store shared by several machines; nil: SQLite (store_open.go)

	log     *slog.Logger
	scratch string // a dry run's private locks folder, outside the state root
	clk     clock.Clock
	mode    string                   // runs.CoordinationLocks or runs.CoordinationLeases (coordination.go)
	stepRef runs.StoreRef            // what step supervisors open in leases mode, for a store other than SQLite
	peer    atomic.Pointer[peerBeat] // this process's registration as a live peer, while started (peers.go)

	mu      sync.Mutex
	started bool
	closed  bool
}

// Open resolves the workspace, reads its config and builds every part.
// Nothing runs until Start. Close releases what Open took.
func Open(ctx context.Context, cfg Config) (*Host, error) {
	if cfg.StateRoot == "" {
		return nil, errors.New("open host: no state root")
	}
	dir := cfg.Dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("find the working directory: %w", err)
		}
		dir = wd
	}
	ws, err := workspace.Resolve(dir, cfg.Workspace, cfg.StateRoot)
	if err != nil {
		return nil, err
	}
	settings, err := LoadSettings(ws)
	if err != nil {
		return nil, err
	}
	useWorkspaceID(ws, settings, cfg.StateRoot)
	if cfg.MaxArchives != nil {
		settings.Sessions.MaxArchives = cfg.MaxArchives
	}
	h := &Host{Workspace: ws, Settings: settings, log: cfg.Logger}
	if h.log == nil {
		h.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	h.clk = clk
	if err := h.openStore(ctx, cfg, clk.Now()); err != nil {
		return nil, err
	}
	inMemory := h.InMemory()

	locksDir, memoryDir := ws.LocksDir(), ws.MemoryDir()
	if inMemory {
		// Lock files need a folder: a private one outside the state root,
		// removed by Close. No memory files are written.
		if h.scratch, err = os.MkdirTemp("", "mcp-host-memory-"); err != nil {
			h.Close()
			return nil, fmt.Errorf("create scratch folder: %w", err)
		}
		locksDir, memoryDir = filepath.Join(h.scratch, "locks"), ""
		if err := os.Mkdir(locksDir, 0o700); err != nil {
			h.Close()
			return nil, fmt.Errorf("create scratch folder: %w", err)
		}
	}

	// One disk guard for launches and fires: the state folder's disk, or
	// none when the state is in memory.
	guard := &diskfree.Guard{}
	if !inMemory {
		guard = settings.Disk.MinFree.guard(ws.StateDir)
	}
	runOpts := runs.Options{
		Store: h.Store, Workspace: ws, Targets: settings.Workflows.Targets(ws.WorkflowsDir()), Clock: clk, Logger: h.log, DiskGuard: guard,
		InMemory: inMemory, StopGrace: cfg.StopGrace, OnChange: cfg.OnRunChange,
		JournalRunCap: int64(settings.Journal.PerRun), JournalLineCap: int(settings.Journal.PerLine),
		EnvPass: settings.Env.Pass,
	}
	h.coordinate(cfg, &runOpts)
	h.notifier = h.newNotifier(settings.Notify, clk)
	h.notifier.runOptions(&runOpts)
	h.shareRuns(&runOpts)
	h.Runs, err = runs.New(runOpts)
	if err != nil {
		h.Close()
		return nil, err
	}
	// Fires share the engine's workflow cache and preparation.
	h.Targets = &automations.WorkflowTargets{Dir: ws.WorkflowsDir(), Source: h.Runs.Targets(), EnvPass: settings.Env.Pass}
	if h.Policy, err = settings.Agents.Policy(); err != nil {
		h.Close()
		return nil, err
	}
	schedCfg := automations.Config{
		Store: h.Store, LocksDir: locksDir, Targets: h.Targets, Workspace: ws.Root,
		WorkflowsDir: ws.WorkflowsDir(), Clock: clk, Log: h.log, DiskGuard: guard,
		PauseAfter: settings.Automations.pauseAfter(), LeaseOnly: h.Leases(), Lease: h.dutyLease(),
		Policy: h.Policy,
	}
	h.notifier.schedulerOptions(&schedCfg)
	h.Scheduler = automations.New(schedCfg)
	h.Worker = locks.NewDuty(locks.DutyConfig{Dir: locksDir, Name: "worker", Leases: h.Store, Clock: clk, LeaseOnly: h.Leases(), Lease: h.dutyLease()})
	h.Audit = &audit.Log{Store: h.Store, Clock: clk, Log: h.log}
	h.Automations = &automations.Service{
		Store: h.Store, LocksDir: locksDir, Targets: h.Targets, Clock: clk, Notify: h.Scheduler.Notify,
		Policy: h.Policy,
	}
	h.Sessions = sessions.New(h.Store, sessions.Options{
		MemoryDir: memoryDir, LocksDir: locksDir, MaxArchives: settings.Sessions.MaxArchives, Clock: clk,
		MemoryFiles: h.memoryFiles(),
	})
	h.Retention = retention.NewCollector(retention.Options{
		Store: h.Store, Policy: settings.Retention.Policy(), Journals: h.Runs, Clock: clk, Log: h.log,
	})
	if every := settings.Retention.GCInterval(); every > 0 {
		h.gc = &retention.Loop{C: h.Retention, Interval: every}
	}
	if w, ok := h.Store.(store.HealthWatcher); ok && !cfg.ReadOnly {
		h.sup = newSupervisor()
		h.superviseHealth(w)
	}
	return h, nil
}

// openStore picks the backend: memory for a dry run or a read-only look
// at a workspace with no state, else the workspace's SQLite database.
func (h *Host) openStore(ctx context.Context, cfg Config, now time.Time) error {
	ws := h.Workspace
	if cfg.DryRun {
		h.Store = memory.New()
		return nil
	}
	if sh, err := h.Settings.Shared(); err != nil || sh != nil {
		if err != nil {
			return fmt.Errorf("open store: %w", err)
		}
		return h.openShared(ctx, cfg, now, sh)
	}
	if !cfg.Write || cfg.ReadOnly {
		if _, err := os.Stat(ws.DBPath()); err != nil {
			h.Store = memory.New()
			return nil
		}
	}
	if cfg.ReadOnly {
		st, err := sqlite.Open(ctx, ws.DBPath(), sqlite.Options{ReadOnly: true})
		if err != nil {
			return err
		}
		h.Store = st
		return nil
	}
	if err := ws.Prepare(); err != nil {
		return err
	}
	if cfg.Write {
		if err := ws.Touch(now); err != nil {
			return err
		}
	}
	opts := sqlite.Options{Logger: h.log}
	if d := h.Settings.Store.BusyTimeout; d != nil {
		opts.WriteWait = time.Duration(*d)
	}
	st, err := sqlite.Open(ctx, ws.DBPath(), opts)
	if err != nil {
		return err
	}
	h.Store = st
	return nil
}

// InMemory reports whether the host keeps its state in memory (a dry run,
// or a read-only look at a workspace with no state).
func (h *Host) InMemory() bool {
	_, ok := h.Store.(*memory.Store)
	return ok
}

// Start runs the loops of a peer: the run engine's adoption loop, the
// scheduler (which fires automations while it holds locks/scheduler) and
// the retention loop (a minute after start, then every
// retention.interval). It
// also finishes compactions a dead process left half published. Stop
// ends them.
func (h *Host) Start(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errors.New("start host: closed")
	}
	if h.started {
		return nil
	}
	if err := h.Sessions.RecoverAll(ctx); err != nil {
		h.log.Warn("recover session memory files", "err", err)
	}
	if err := h.Runs.Start(ctx); err != nil {
		return err
	}
	if err := h.Scheduler.Start(ctx); err != nil {
		h.Runs.Stop()
		return err
	}
	if h.gc != nil {
		if err := h.gc.Start(ctx); err != nil {
			h.Scheduler.Stop()
			h.Runs.Stop()
			return err
		}
	}
	if h.notifier != nil {
		h.notifier.outbox.Start(ctx) //nolint:errcheck // returns nil
	}
	h.RegisterPeer(ctx) //nolint:errcheck // returns nil
	h.started = true
	return nil
}

// Stop stops the scheduler and the run engine: runs still executing are
// released for a peer to adopt. It is idempotent and waits.
func (h *Host) Stop() {
	if h.sup != nil {
		h.sup.halt()
	}
	h.stopLoops()
}

// stopLoops stops the retention loop, the scheduler and the run engine.
func (h *Host) stopLoops() {
	h.peer.Load().end()
	if h.notifier != nil {
		h.notifier.outbox.Stop()
	}
	if h.gc != nil {
		h.gc.Stop()
	}
	if h.Scheduler != nil {
		h.Scheduler.Stop()
	}
	if h.Runs != nil {
		h.Runs.Stop()
	}
}

// Close stops the host and closes the store. It is idempotent.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	started := h.started
	h.mu.Unlock()
	if !started {
		// Its run was executed here (mcp-host run): what it enqueued is
		// tried before the process ends, not only by the next serve or
		// worker.
		h.notifier.drain()
	}
	h.Stop()
	var err error
	if h.Store != nil {
		if err = h.Store.Close(); err != nil {
			err = fmt.Errorf("close store: %w", err)
		}
	}
	if h.scratch != "" {
		os.RemoveAll(h.scratch)
	}
	return err
}
