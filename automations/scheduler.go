package automations

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

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

	// LockRetry is how often a follower tries locks/scheduler (default
	// 500ms): a dead leader is replaced within about that long.
	LockRetry time.Duration
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
	// Ahead is how long before a cron slot the leader prepares the fires
	// due at it (builds their runs, computes their next due times), so
	// that at the slot it only commits them, every fire due at that
	// instant in one store operation (store.FireMany). Default 2s;
	// negative: never ahead (each slot is fired by a pass after it).
	Ahead time.Duration
}

// Scheduler fires automations. Every process may run one; the one holding
// locks/scheduler leads and fires, the others try the lock every LockRetry.
// A fire is a unique (automation, nominal time) row inserted in the
// transaction that queues its run, so even two leaders could never fire a
// slot twice: the lock only decides who tries.
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

	mu       sync.Mutex // guards the fields below
	cancel   context.CancelCauseFunc
	done     chan struct{}
	crons    map[string]*schedule.Cron
	inflight map[string]string    // automation id -> run id being watched
	polling  map[string]bool      // monitors being polled
	lastPoll map[string]time.Time // monitor id -> last poll
	retryAt  map[string]time.Time // automation id -> no fire before
	version  int64
	finger   string
	synced   bool
	soon     []slot // cron slots the last pass saw coming, for arm

	// armed is the next slot's fires, prepared ahead; only the lead
	// goroutine uses it.
	armed *armedSlot

	polls sync.WaitGroup
}

// ErrStopped is the cause of a scheduler's context after Stop.
var ErrStopped = errors.New("scheduler stopped")

// New returns a scheduler; Start runs it.
func New(cfg Config) *Scheduler {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Runs == nil {
		cfg.Runs = cfg.Store
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
	return &Scheduler{
		cfg:      cfg,
		log:      cfg.Log,
		dig:      newDigester(cfg.Workspace, cfg.HTTPClient),
		notify:   make(chan struct{}, 1),
		pollDone: make(chan struct{}, 1),
		crons:    map[string]*schedule.Cron{},
		inflight: map[string]string{},
		polling:  map[string]bool{},
		lastPoll: map[string]time.Time{},
		retryAt:  map[string]time.Time{},
	}
}

// Start runs the scheduler in the background until ctx ends or Stop. It
// returns at once; it fails only when the configuration is incomplete or
// the scheduler was started before.
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
}

// Notify tells the scheduler that automations changed, so that it
// recalculates now. It never blocks.
func (s *Scheduler) Notify() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Leading reports whether this scheduler holds locks/scheduler now.
func (s *Scheduler) Leading() bool { return s.leading.Load() }

func (s *Scheduler) run(ctx context.Context) {
	defer close(s.done)
	for {
		l, err := locks.TryLock(s.cfg.LocksDir, "scheduler")
		switch {
		case err == nil:
			s.lead(ctx)
			if err := l.Unlock(); err != nil {
				s.log.Warn("release the scheduler lock", "err", err)
			}
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

// lead runs the scheduling loop while this process holds the lock, until
// ctx ends.
func (s *Scheduler) lead(ctx context.Context) {
	s.leading.Store(true)
	defer s.leading.Store(false)
	defer s.polls.Wait()
	s.log.Info("scheduler leading")
	s.syncIfChanged(ctx)
	if v, err := s.cfg.Store.AutomationsVersion(ctx); err == nil {
		s.setVersion(v)
	}
	defer func() { s.armed = nil }()
	wake := s.cfg.Clock.NewTimer(0)
	check := s.cfg.Clock.NewTimer(s.cfg.Check)
	defer wake.Stop()
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake.C():
		case <-s.notify:
		case <-s.pollDone:
		case <-check.C():
			check.Reset(s.cfg.Check)
			if !s.armedDue() && !s.changed(ctx) {
				continue
			}
		}
		at := s.tick(ctx)
		wait := s.cfg.MaxWait
		if !at.IsZero() {
			wait = min(max(at.Sub(s.cfg.Clock.Now()), 0), s.cfg.MaxWait)
		}
		wake.Stop()
		wake.Reset(wait)
	}
}

// tick is one wake-up of the leader: it commits the fires prepared for
// a slot that has come, runs a pass for everything else, prepares the
// next slot when it is near, and returns when to wake up next (zero:
// nothing scheduled).
func (s *Scheduler) tick(ctx context.Context) time.Time {
	s.fireArmed(ctx)
	return s.arm(ctx, s.step(ctx))
}

func (s *Scheduler) setVersion(v int64) {
	s.mu.Lock()
	s.version = v
	s.mu.Unlock()
}

// changed reports whether anything the leader was not told about moved:
// the automations version, the workflow files, a watched run.
func (s *Scheduler) changed(ctx context.Context) bool {
	moved := s.syncIfChanged(ctx)
	if v, err := s.cfg.Store.AutomationsVersion(ctx); err != nil {
		s.log.Warn("read automations version", "err", err)
	} else {
		s.mu.Lock()
		if v != s.version {
			s.version, moved = v, true
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	watched := make(map[string]string, len(s.inflight))
	for a, r := range s.inflight {
		watched[a] = r
	}
	s.mu.Unlock()
	for _, runID := range watched {
		r, err := s.cfg.Runs.GetRun(ctx, runID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && r.Status.Settled()) {
			return true
		}
	}
	return moved
}

// syncIfChanged syncs the workflow files when they changed since the last
// sync; it reports whether it synced.
func (s *Scheduler) syncIfChanged(ctx context.Context) bool {
	if s.cfg.WorkflowsDir == "" {
		return false
	}
	finger, err := Fingerprint(s.cfg.WorkflowsDir)
	if err != nil {
		s.log.Warn("look at workflow files", "err", err)
		return false
	}
	s.mu.Lock()
	same := s.synced && finger == s.finger
	s.mu.Unlock()
	if same {
		return false
	}
	rep, err := Sync(ctx, SyncParams{Store: s.cfg.Store, Dir: s.cfg.WorkflowsDir, Clock: s.cfg.Clock})
	for _, p := range rep.Problems {
		s.log.Warn("workflow trigger", "problem", p)
	}
	if err != nil {
		s.log.Warn("sync workflow triggers", "err", err)
		return false
	}
	s.mu.Lock()
	s.finger, s.synced = finger, true
	s.mu.Unlock()
	return true
}

// step does one pass over every enabled automation: it records settled
// runs, fires what is due, starts due monitor polls, and returns the
// earliest time something is due next (zero: nothing scheduled).
func (s *Scheduler) step(ctx context.Context) time.Time {
	now := s.cfg.Clock.Now()
	list, err := s.cfg.Store.ListAutomations(ctx, store.AutomationFilter{})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("list automations", "err", err)
		}
		return now.Add(s.cfg.Check)
	}
	live := make(map[string]bool, len(list))
	for _, a := range list {
		live[a.ID] = a.Enabled
	}
	s.mu.Lock()
	clear(s.inflight)
	s.soon = s.soon[:0]
	for id := range s.lastPoll {
		if !live[id] && !s.polling[id] {
			delete(s.lastPoll, id) // deleted or paused: poll afresh later
		}
	}
	for id := range s.retryAt {
		if !live[id] {
			delete(s.retryAt, id)
		}
	}
	inUse := make(map[string]bool, len(s.crons))
	for _, a := range list {
		if a.Trigger.Kind == store.TriggerCron {
			inUse[cronKey(a.Trigger)] = true
		}
	}
	maps.DeleteFunc(s.crons, func(k string, _ *schedule.Cron) bool { return !inUse[k] })
	s.mu.Unlock()
	var (
		mu   sync.Mutex
		next time.Time
		wg   sync.WaitGroup
		sem  = make(chan struct{}, s.cfg.Parallel)
	)
	for _, a := range list {
		if !a.Enabled {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			due := s.visit(ctx, a, now)
			if due.IsZero() {
				return
			}
			mu.Lock()
			if next.IsZero() || due.Before(next) {
				next = due
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return next
}

// visit handles one automation at now and returns when it is due next.
func (s *Scheduler) visit(ctx context.Context, a *store.Automation, now time.Time) time.Time {
	if a.State.InFlight() {
		a = s.watchRun(ctx, a)
	}
	if !a.State.Buffered.IsZero() && !a.State.InFlight() {
		a = s.release(ctx, a, now)
	}
	switch a.Trigger.Kind {
	case store.TriggerCron:
		return s.visitCron(ctx, a, now)
	case store.TriggerInterval:
		if a.Overlap == store.OverlapAllow {
			return s.visitRate(ctx, a, now)
		}
		return s.visitDelay(ctx, a, now)
	case store.TriggerFiles, store.TriggerHTTP:
		return s.visitMonitor(ctx, a, now)
	}
	return time.Time{}
}

// watchRun records the settle of a's latest run if it has settled, and
// otherwise watches it. It returns a, updated.
func (s *Scheduler) watchRun(ctx context.Context, a *store.Automation) *store.Automation {
	runID := a.State.LastRunID
	r, err := s.cfg.Runs.GetRun(ctx, runID)
	var fin *store.RunFinish
	switch {
	case errors.Is(err, store.ErrNotFound):
		fin = &store.RunFinish{RunID: runID, At: s.cfg.Clock.Now(), Status: "missing"}
	case err != nil:
		s.log.Warn("read run", "run", runID, "err", err)
	case r.Status.Settled():
		at := r.FinishedAt
		if at.IsZero() {
			at = r.UpdatedAt
		}
		fin = &store.RunFinish{RunID: runID, At: at, Status: r.Status}
	}
	if fin == nil {
		s.mu.Lock()
		s.inflight[a.ID] = runID
		s.mu.Unlock()
		return a
	}
	b, err := s.cfg.Store.RecordAutomation(ctx, store.RecordParams{AutomationID: a.ID, Finished: fin})
	if err != nil {
		s.log.Warn("record run finish", "automation", a.Key, "run", runID, "err", err)
		return a
	}
	return b
}

// release hands over the fire buffer_one held, now that the previous run
// settled.
func (s *Scheduler) release(ctx context.Context, a *store.Automation, now time.Time) *store.Automation {
	nominal := a.State.Buffered
	run, err := s.prepare(ctx, a, nominal)
	if err != nil {
		s.recordError(ctx, a, err)
		return a
	}
	if _, err := s.cfg.Store.Fire(ctx, store.FireParams{AutomationID: a.ID, Nominal: nominal, Actual: now, Run: run, Release: true}); err != nil {
		s.log.Warn("release buffered fire", "automation", a.Key, "err", err)
		return a
	}
	b, err := s.cfg.Store.GetAutomation(ctx, a.ID)
	if err != nil {
		return a
	}
	if b.State.InFlight() {
		s.mu.Lock()
		s.inflight[b.ID] = b.State.LastRunID
		s.mu.Unlock()
	}
	return b
}

func (s *Scheduler) prepare(ctx context.Context, a *store.Automation, nominal time.Time) (*store.Run, error) {
	run, err := s.cfg.Targets.Prepare(ctx, a.Target, a.Input)
	if err != nil {
		return nil, err
	}
	run.Trigger = store.Trigger{Kind: "automation", AutomationID: a.ID, Nominal: nominal.UTC().Truncate(time.Millisecond)}
	return run, nil
}

// fire queues a's run for the slot p.Nominal.
func (s *Scheduler) fire(ctx context.Context, a *store.Automation, p store.FireParams) error {
	run, err := s.prepare(ctx, a, p.Nominal)
	if err != nil {
		return err
	}
	// The actual time is when the fire is handed to the store, so a lag
	// includes waiting behind other fires of the same pass.
	p.AutomationID, p.Run, p.Actual = a.ID, run, s.cfg.Clock.Now()
	res, err := s.cfg.Store.Fire(ctx, p)
	if err != nil {
		return err
	}
	if !res.AlreadyFired && res.Run != nil {
		s.mu.Lock()
		s.inflight[a.ID] = res.Run.ID
		s.mu.Unlock()
	}
	return nil
}

func (s *Scheduler) recordError(ctx context.Context, a *store.Automation, err error) {
	if errors.Is(err, store.ErrPaused) || ctx.Err() != nil {
		return
	}
	s.log.Warn("automation", "key", a.Key, "err", err)
	if a.State.LastError == err.Error() {
		return
	}
	if _, rerr := s.cfg.Store.RecordAutomation(ctx, store.RecordParams{AutomationID: a.ID, Error: err.Error()}); rerr != nil {
		s.log.Warn("record automation error", "automation", a.Key, "err", rerr)
	}
}

// cursor is the slot a's schedule counts from.
func cursor(a *store.Automation) time.Time {
	if !a.State.Cursor.IsZero() {
		return a.State.Cursor
	}
	return a.CreatedAt
}

// cronKey names a parsed cron spec in Scheduler.crons.
func cronKey(t store.AutomationTrigger) string { return t.TZ + "\x00" + t.Cron }

// cron returns t's parsed spec. Specs are parsed once (parsing loads the
// zone's data from disk) and kept while an automation uses them.
func (s *Scheduler) cron(t store.AutomationTrigger) (*schedule.Cron, error) {
	key := cronKey(t)
	s.mu.Lock()
	c, ok := s.crons[key]
	s.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := schedule.ParseCron(t.Cron, t.TZ)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.crons[key] = c
	s.mu.Unlock()
	return c, nil
}

func (s *Scheduler) visitCron(ctx context.Context, a *store.Automation, now time.Time) time.Time {
	c, err := s.cron(a.Trigger)
	if err != nil {
		s.recordError(ctx, a, err)
		return time.Time{}
	}
	from := cursor(a)
	res := schedule.Due(c, schedule.DueParams{LastNominal: from, Now: now, Policy: schedule.MissedPolicy(a.Missed)})
	switch {
	case !res.Fire.IsZero():
		err := s.fire(ctx, a, store.FireParams{Nominal: res.Fire, Missed: int64(res.Missed), NextDue: res.Next})
		if err != nil {
			// The slot is lost: count it as missed rather than retry it
			// on every pass.
			s.recordError(ctx, a, fmt.Errorf("fire %s: %w", res.Fire.Format(time.RFC3339), err))
			s.record(ctx, a, store.RecordParams{Cursor: res.LastNominal, Missed: int64(res.Missed) + 1, NextDue: res.Next})
		}
	case res.LastNominal.After(from):
		s.record(ctx, a, store.RecordParams{Cursor: res.LastNominal, Missed: int64(res.Missed), NextDue: res.Next})
	case !res.Next.Equal(a.State.NextDue):
		s.record(ctx, a, store.RecordParams{NextDue: res.Next})
	}
	if !res.Next.IsZero() {
		// The cursor the store holds now, if the writes above went
		// through (arm's fire expects it, so a miss is only a miss).
		sl := slot{a: a, at: res.Next, cursor: a.State.Cursor, from: from}
		if res.LastNominal.After(from) {
			sl.cursor, sl.from = res.LastNominal, res.LastNominal
		}
		s.mu.Lock()
		s.soon = append(s.soon, sl)
		s.mu.Unlock()
	}
	return res.Next
}

func (s *Scheduler) record(ctx context.Context, a *store.Automation, p store.RecordParams) {
	p.AutomationID = a.ID
	if _, err := s.cfg.Store.RecordAutomation(ctx, p); err != nil && ctx.Err() == nil {
		s.log.Warn("record automation", "automation", a.Key, "err", err)
	}
}

// retryLater keeps an automation whose fire failed from firing again before
// at; blocked reports whether it is still held back.
func (s *Scheduler) retryLater(id string, at time.Time) {
	s.mu.Lock()
	s.retryAt[id] = at
	s.mu.Unlock()
}

func (s *Scheduler) blocked(id string, now time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.retryAt[id]
	if !ok {
		return time.Time{}, false
	}
	if !now.Before(at) {
		delete(s.retryAt, id)
		return time.Time{}, false
	}
	return at, true
}

// visitDelay handles an interval measured from the previous completion.
func (s *Scheduler) visitDelay(ctx context.Context, a *store.Automation, now time.Time) time.Time {
	if a.State.InFlight() {
		return time.Time{} // watched: its settle wakes the scheduler
	}
	ev := every(a.Trigger)
	res := schedule.NextInterval(schedule.IntervalParams{Every: ev, Created: a.CreatedAt, LastStart: a.State.LastStart, LastFinish: a.State.LastFinish, Now: now})
	if res.InFlight {
		return time.Time{}
	}
	if !res.Due {
		if !res.Nominal.Equal(a.State.NextDue) {
			s.record(ctx, a, store.RecordParams{NextDue: res.Nominal})
		}
		return res.Nominal
	}
	if at, ok := s.blocked(a.ID, now); ok {
		return at
	}
	nominal := res.Nominal
	if c := a.State.Cursor; !nominal.After(c) {
		nominal = c.Truncate(time.Second).Add(time.Second)
	}
	if err := s.fire(ctx, a, store.FireParams{Nominal: nominal, Missed: int64(res.Missed)}); err != nil {
		s.recordError(ctx, a, err)
		s.retryLater(a.ID, now.Add(ev))
		return now.Add(ev)
	}
	return time.Time{}
}

// visitRate handles an interval with overlap allow: ticks every Every from
// the previous tick, whether or not runs finished. Missed ticks do not
// queue: an overdue one fires once and the others are counted.
func (s *Scheduler) visitRate(ctx context.Context, a *store.Automation, now time.Time) time.Time {
	ev := every(a.Trigger)
	from := a.State.Cursor
	if from.IsZero() {
		from = a.CreatedAt.Truncate(time.Second)
	}
	due := from.Add(ev)
	if now.Before(due) {
		if !due.Equal(a.State.NextDue) {
			s.record(ctx, a, store.RecordParams{NextDue: due})
		}
		return due
	}
	if at, ok := s.blocked(a.ID, now); ok {
		return at
	}
	k := now.Sub(from) / ev
	nominal := from.Add(k * ev)
	next := nominal.Add(ev)
	if err := s.fire(ctx, a, store.FireParams{Nominal: nominal, Missed: int64(k - 1), NextDue: next}); err != nil {
		s.recordError(ctx, a, err)
		s.record(ctx, a, store.RecordParams{Cursor: nominal, Missed: int64(k), NextDue: next})
	}
	return next
}
