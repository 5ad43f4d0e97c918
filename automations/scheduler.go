package automations

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/internal/diskfree"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/automations/schedule"
	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

// RunReader reads runs; the store is one. The scheduler reads the status of
// the runs it fired to learn when they settle.
type RunReader interface {
	GetRun(ctx context.Context, id string) (*store.Run, error)
}

// Config configures a Scheduler.
type Config struct {
	Store    store.Store
	LocksDir string
	Targets  Targets
	// Workspace is the workspace root: files monitors read under it.
	Workspace string
	// WorkflowsDir, when set, is synced into OwnerConfig automations when
	// the scheduler starts leading and whenever a file in it changes.
	WorkflowsDir string
	Clock        clock.Clock  // nil: the real clock
	Log          *slog.Logger // nil: discard
	// Runs reads run status; nil: Store.
	Runs RunReader
	// HTTPClient polls http monitors; nil: a client with HTTPTimeout.
	HTTPClient *http.Client
	// DiskGuard refuses new fires while the state disk is nearly full;
	// nil: a guard on the disk holding LocksDir.
	DiskGuard *diskfree.Guard
	// Policy is the agents: settings: an automation an agent owns fires
	// only a target agents.launch allows now (one made before the setting
	// changed fails its fires, naming the key, and is paused by
	// PauseAfter like any failing automation). nil: any target.
	Policy *access.Policy

	// LockRetry is how often a follower tries locks/scheduler (default
	// 500ms) where it cannot wait on the leader (locks.Duty.WaitFree: its
	// exit, its lock file, its lease's expiry), so a dead leader is
	// replaced at once, or within about LockRetry.
	LockRetry time.Duration
	// Lease is the length of the scheduler's lease (default
	// locks.DefaultLease, renewed every fifth of it): a leader that stops
	// making progress (SIGSTOP, Ctrl-Z) is replaced within about
	// Lease+LockRetry of its last renewal, though it keeps the lock.
	Lease time.Duration
	// LeaseOnly: the scheduler duty has no lock file, its lease alone
	// decides (peers on several machines; locks.DutyConfig.LeaseOnly).
	LeaseOnly bool
	// Check is how often the leader looks for changes it was not told
	// about (other processes' edits, workflow files, settled runs);
	// default 1s.
	Check time.Duration
	// MaxWait caps the wait for the next due time (default 15s), so a
	// clock jump or a resumed laptop is noticed.
	MaxWait time.Duration
	// Parallel bounds the automations visited at once by a pass (default
	// 64); their writes share the store's group commits.
	Parallel int
	// PauseAfter pauses an automation whose fires failed this many times
	// in a row (its runs failed, or its fires errored: target gone, input
	// invalid, launch refused); 0: never.
	PauseAfter int
	// PauseNotify, when set, gives the outbox rows enqueued with a pause
	// of a with note at at (store.PauseParams.Notify); OnPause is told
	// after a pause was stored.
	PauseNotify func(a *store.Automation, note string, at time.Time) []*store.Notification
	OnPause     func(a *store.Automation)
	// Ahead is how long before a cron slot the leader prepares the fires
	// due at it (builds their runs, computes their next due times), so
	// that at the slot it only commits them, in slices of FireSlice, a
	// store operation (store.FireMany) each. Default 2s;
	// negative: never ahead (each slot is fired by a pass after it).
	Ahead time.Duration
	// FireSlice is how many prepared fires one store operation commits
	// (default 100): smaller slices make the first fires of a slot
	// durable sooner, at the cost of a commit each (see fireSliced).
	FireSlice int
}

// Scheduler fires automations. Every process may run one; the one holding
// the scheduler duty (locks/scheduler and its lease, see locks.Duty) leads
// and fires, the others try it every LockRetry. Its fires and records are
// fenced by the lease, so a leader that lost it while stopped cannot
// write with it; it stops leading and follows again. A fire is a unique
// (automation, nominal time) row inserted in the transaction that queues
// its run, so even two leaders could never fire a slot twice: the lock
// only decides who tries.
//
// The leader keeps one timer to the earliest due time, reset after each
// pass, and recalculates early on Notify, on a change made by another
// process (seen within Check), or when a run it fired settles.
type Scheduler struct {
	cfg Config
	log *slog.Logger
	dig *digester

	notify   chan struct{}
	pollDone chan struct{}
	leading  atomic.Bool
	duty     *locks.Duty
	holding  atomic.Pointer[locks.Holding] // the duty while leading

	mu       sync.Mutex // guards the fields below
	cancel   context.CancelCauseFunc
	done     chan struct{}
	crons    map[string]*schedule.Cron
	inflight map[string]string    // automation id -> run id being watched
	polling  map[string]bool      // monitors being polled
	lastPoll map[string]time.Time // monitor id -> last poll
	retryAt  map[string]time.Time // automation id -> no fire before
	stepped  map[string]stepBack  // automation id -> clock shift after a backward step
	version  int64
	finger   string
	synced   bool
	soon     []slot // cron slots the last pass saw coming, for arm

	// armed is the next slot's fires, prepared ahead; only the lead
	// goroutine uses it.
	armed *armedSlot

	polls sync.WaitGroup

	// hook, set by tests before Start, is told what the leader did (the
	// events below), so that tests wait on signals, not sleeps.
	hook func(event string)
}

// Events a Scheduler's test hook is told.
const (
	eventLead = "lead" // it took the lead and synced the workflow files
	eventTick = "tick" // it finished a tick and set its wake timer
	eventPoll = "poll" // a monitor poll finished
	eventLeft = "left" // it left the lead and released the duty
)

// ErrStopped is the cause of a scheduler's context after Stop.
var ErrStopped = errors.New("scheduler stopped")

// New returns a scheduler; Start runs it.
func New(cfg Config) *Scheduler {
	cfg.Clock = clock.OrReal(cfg.Clock)
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Runs == nil {
		cfg.Runs = cfg.Store
	}
	if cfg.DiskGuard == nil {
		cfg.DiskGuard = &diskfree.Guard{Path: cfg.LocksDir}
	}
	if cfg.LockRetry <= 0 {
		cfg.LockRetry = 500 * time.Millisecond
	}
	if cfg.Check <= 0 {
		cfg.Check = time.Second
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 15 * time.Second
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 64
	}
	if cfg.Ahead == 0 {
		cfg.Ahead = 2 * time.Second
	}
	if cfg.FireSlice <= 0 {
		cfg.FireSlice = 100
	}
	return &Scheduler{
		cfg:      cfg,
		log:      cfg.Log,
		duty:     locks.NewDuty(locks.DutyConfig{Dir: cfg.LocksDir, Name: "scheduler", Leases: cfg.Store, Clock: cfg.Clock, Lease: cfg.Lease, LeaseOnly: cfg.LeaseOnly}),
		dig:      newDigester(cfg.Workspace, cfg.HTTPClient),
		notify:   make(chan struct{}, 1),
		pollDone: make(chan struct{}, 1),
		crons:    map[string]*schedule.Cron{},
		inflight: map[string]string{},
		polling:  map[string]bool{},
		lastPoll: map[string]time.Time{},
		retryAt:  map[string]time.Time{},
		stepped:  map[string]stepBack{},
	}
}

// Start runs the scheduler in the background until ctx ends or Stop. It
// returns at once; it fails only when the configuration is incomplete or
// the scheduler runs already. A stopped scheduler can be started again
// (a host pauses it while its store cannot write).
func (s *Scheduler) Start(ctx context.Context) error {
	if s.cfg.Store == nil || s.cfg.Targets == nil || s.cfg.LocksDir == "" {
		return errors.New("start scheduler: Store, Targets and LocksDir are required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		return errors.New("start scheduler: already started")
	}
	ctx, s.cancel = context.WithCancelCause(ctx)
	s.done = make(chan struct{})
	go s.run(ctx)
	return nil
}

// Stop ends the scheduler and waits for it: polls in flight end, the
// scheduler lock is released. It is idempotent.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel(ErrStopped)
	<-done
	s.mu.Lock()
	if s.done == done {
		s.cancel, s.done = nil, nil
	}
	s.mu.Unlock()
}

// Running reports whether the scheduler was started and not stopped.
func (s *Scheduler) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done != nil
}

// Notify tells the scheduler that automations changed, so that it
// recalculates now. It never blocks.
func (s *Scheduler) Notify() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Leading reports whether this scheduler holds the scheduler duty now.
func (s *Scheduler) Leading() bool { return s.leading.Load() }

func (s *Scheduler) run(ctx context.Context) {
	defer close(s.done)
	for {
		h, err := s.duty.TryTake(ctx)
		var held *locks.DutyHeldError
		switch {
		case err == nil:
			s.lead(ctx, h)
			if err := h.Err(); err != nil {
				s.log.Warn("scheduler lost its lease; following again", "err", err)
			}
			if err := h.Release(); err != nil {
				s.log.Warn("release the scheduler lock", "err", err)
			}
			s.signal(eventLeft)
		case errors.As(err, &held):
			// Wait for the leader to go rather than try every LockRetry.
			if s.duty.WaitFree(ctx, held, s.cfg.LockRetry) != nil {
				return
			}
			continue
		case !errors.Is(err, locks.ErrHeld):
			s.log.Warn("take the scheduler lock", "err", err)
		}
		if ctx.Err() != nil {
			return
		}
		t := s.cfg.Clock.NewTimer(s.cfg.LockRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}
