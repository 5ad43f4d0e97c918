package runs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/diskfree"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/secrets"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workspace"
)

// Options configure an Engine. Store and Workspace are required; the rest
// have defaults.
type Options struct {
	Store     store.Store
	Workspace *workspace.Workspace
	// Targets finds workflows; default DirTargets(Workspace.WorkflowsDir()).
	// Give Engine.Targets() to automations.WorkflowTargets.Source so that
	// launches and fires share one cache.
	Targets Targets
	// Clock tells the time and makes every timer of the engine; default:
	// the wall clock.
	Clock  clock.Clock
	Logger *slog.Logger // default: discard
	// InMemory keeps journals and run locks in this process: nothing is
	// written under the state dir (--dry-run, tests with the memory store).
	InMemory bool
	// Journals, when set, keeps run journals in this store instead of
	// files (hosts sharing a store from several machines): any host
	// follows any run. JournalDatabase tells step supervisors, separate
	// processes, how to reach it; without it their output stays in this
	// machine's journal files.
	Journals        store.JournalStore
	JournalDatabase *JournalDatabase
	// OnChange, when set, is called (from any goroutine, never while the
	// engine holds a lock) after this engine changed a run or its journal,
	// and, while the peer loop runs, when it notices a change made by
	// another process.
	OnChange func(runID string)
	// Notify, when set, gives the outbox rows to write with a run's park
	// on a question and with its settle (store.ParkParams.Notify): the
	// host's notify settings decide (package notify).
	Notify func(NotifyEvent) []*store.Notification
	// DiskGuard refuses Launch when the state disk is nearly full; default
	// a guard of Workspace.StateDir (none when InMemory).
	DiskGuard *diskfree.Guard

	MaxConcurrent int // runs executing at once that the peer loop adopts up to; default 8
	// AdoptEvery is the peer loop's period where it polls: how soon a run
	// whose owner died, a queued run or a waiting run whose time came is
	// picked up. A pass is one indexed query and a lock test per
	// candidate; default 100ms. A peer that waits instead (peer_wait.go)
	// looks at commits at most this often.
	AdoptEvery time.Duration
	CancelPoll time.Duration // how often an owner checks for a cancel request; default 250ms
	KillGrace  time.Duration // SIGTERM to SIGKILL; default 5s
	// StopGrace is how long Stop lets a step in flight finish before it
	// releases its run: an exec or shell step goes on under its
	// supervisor for the next owner to take its result, another step is
	// stopped (interrupted); default 10s.
	StopGrace      time.Duration
	ParkSleepsOver time.Duration // sleeps longer than this park the run; default 5s
	OutputCap      int           // bytes of each stream kept in a step's result; default 1 MiB
	// JournalRunCap bounds the text a run's journal keeps: past it the
	// journal keeps the head and, written when the step ends, a tail of
	// the latest output (a quarter of the cap, at most 1 MiB) after a
	// "truncated" record; default 16 MiB (DefaultJournalRunCap).
	JournalRunCap int64
	// JournalLineCap bounds one line of output in the journal: a longer
	// line is cut, with a marker saying how many bytes were dropped;
	// default 64 KiB (DefaultJournalLineCap).
	JournalLineCap int
	HTTPTimeout    time.Duration // default timeout of http steps; default 60s
	HTTPClient     *http.Client  // default: a client without cookies that follows redirects
	// Secrets resolves `${{ secrets.NAME }}` when a step starts; default
	// the workspace's secrets file (secrets.Open).
	Secrets SecretSource
	// EnvPass names the variables a run captures at launch besides PATH,
	// HOME, LANG and TZ (config env.pass); see CaptureEnv.
	EnvPass []string
	// Coordination is how peers agree on run owners and running steps:
	// CoordinationLocks (lock files; the default) or CoordinationLeases
	// (store leases, for a store shared by several machines: see
	// coordination.go). Leases are its lease times; StoreRef is what its
	// step supervisors open to renew their step's lease.
	Coordination string
	Leases       LeaseTimes
	StoreRef     StoreRef
}

// LaunchParams start a run.
type LaunchParams struct {
	Target    string
	Input     json.RawMessage // a JSON object; empty or null means {}
	Trigger   store.Trigger   // default {Kind: "manual"}
	SessionID string
	// Detach only queues the run: this process does not execute it; a
	// peer's adoption loop (a worker) picks it up.
	Detach bool
}

// Engine launches and executes runs. It is safe for concurrent use.
type Engine struct {
	opts     Options
	st       store.Store
	ws       *workspace.Workspace
	targets  Targets
	clk      clock.Clock
	log      *slog.Logger
	journals journals
	// inlineJournals: a run that settles without having written its
	// journal to a file keeps it in the store instead (file journals
	// only: memory journals cost nothing).
	inlineJournals bool
	locker         locker
	secrets        SecretSource
	pid            int

	base     context.Context // parent of every execution; ends StopGrace after Stop
	cancel   context.CancelCauseFunc
	stopping chan struct{} // closed by Stop: executions stop at the next step boundary

	mu       sync.Mutex
	active   map[string]*execution
	stopped  bool
	loopStop context.CancelFunc
	loopDone chan struct{}
	notify   chan struct{} // closed and replaced on every change
	kick     chan struct{} // wakes the peer loop early
	watching bool          // watchOwned runs
	idle     chan struct{} // tells watchOwned that an execution ended
	wg       sync.WaitGroup
}

// New returns an engine. It starts nothing: Launch executes runs it
// launches, Start runs the peer loop.
func New(opts Options) (*Engine, error) {
	if opts.Store == nil || opts.Workspace == nil {
		return nil, errors.New("new run engine: Store and Workspace are required")
	}
	opts.MaxConcurrent = cmp.Or(opts.MaxConcurrent, 8)
	opts.AdoptEvery = cmp.Or(opts.AdoptEvery, 100*time.Millisecond)
	opts.CancelPoll = cmp.Or(opts.CancelPoll, 250*time.Millisecond)
	opts.KillGrace = cmp.Or(opts.KillGrace, 5*time.Second)
	opts.StopGrace = cmp.Or(opts.StopGrace, 10*time.Second)
	opts.ParkSleepsOver = cmp.Or(opts.ParkSleepsOver, 5*time.Second)
	opts.OutputCap = cmp.Or(opts.OutputCap, 1<<20)
	opts.JournalRunCap = cmp.Or(opts.JournalRunCap, DefaultJournalRunCap)
	opts.JournalLineCap = cmp.Or(opts.JournalLineCap, DefaultJournalLineCap)
	if opts.JournalRunCap < MinJournalRunCap || opts.JournalLineCap < MinJournalLineCap || opts.JournalLineCap > MaxJournalLineCap {
		return nil, fmt.Errorf("new run engine: journal caps of %d bytes per run and %d per line: use at least %d per run and %d to %d per line",
			opts.JournalRunCap, opts.JournalLineCap, MinJournalRunCap, MinJournalLineCap, MaxJournalLineCap)
	}
	opts.HTTPTimeout = cmp.Or(opts.HTTPTimeout, 60*time.Second)
	if err := opts.checkCoordination(); err != nil {
		return nil, err
	}
	e := &Engine{
		opts:     opts,
		st:       opts.Store,
		ws:       opts.Workspace,
		targets:  opts.Targets,
		clk:      opts.Clock,
		log:      opts.Logger,
		pid:      os.Getpid(),
		active:   map[string]*execution{},
		notify:   make(chan struct{}),
		kick:     make(chan struct{}, 1),
		idle:     make(chan struct{}, 1),
		stopping: make(chan struct{}),
	}
	if e.targets == nil {
		e.targets = DirTargets(opts.Workspace.WorkflowsDir())
	}
	e.secrets = opts.Secrets
	if e.secrets == nil {
		e.secrets = secrets.Open(opts.Workspace.StateDir, opts.Workspace.LocksDir())
	}
	if e.clk == nil {
		e.clk = clock.Real{}
	}
	if e.log == nil {
		e.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.InMemory {
		e.journals = newMemJournals()
		e.locker = newMemLocker()
	} else {
		e.journals = &fileJournals{dir: opts.Workspace.OutputDir()}
		e.inlineJournals = true
		e.locker = &fileLocker{dir: opts.Workspace.LocksDir()}
	}
	if opts.leases() {
		e.locker = newLeaseLocker(opts.Store, e.clk, opts.Leases)
	}
	if e.opts.DiskGuard == nil && !opts.InMemory {
		e.opts.DiskGuard = &diskfree.Guard{Path: opts.Workspace.StateDir}
	}
	if opts.Journals != nil {
		e.journals = newStoreJournals(opts.Journals, opts.Workspace.OutputDir(), e.changed)
	}
	e.base, e.cancel = context.WithCancelCause(context.Background())
	return e, nil
}

// Targets returns the engine's workflow source.
func (e *Engine) Targets() Targets { return e.targets }

// PID is the process id the engine records as owner.
func (e *Engine) PID() int { return e.pid }

func (e *Engine) now() time.Time { return e.clk.Now() }

// changed wakes every in-process waiter and calls OnChange.
func (e *Engine) changed(runID string) {
	e.mu.Lock()
	close(e.notify)
	e.notify = make(chan struct{})
	e.mu.Unlock()
	if e.opts.OnChange != nil && runID != "" {
		e.opts.OnChange(runID)
	}
}

// changes returns a channel closed at the next change.
func (e *Engine) changes() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.notify
}

// Launch validates the target and the input, stores the run with its
// literals, and (unless p.Detach) executes it in this process. Nothing is
// stored when the target or the input is refused: the error is then an
// *ids.InvalidError, a *workflows.NotFoundError, a workflow load error
// (*workflows.Error, naming file, line and field) or a
// *workflows.InputError; a nearly full state disk refuses it with a
// *diskfree.LowError.
func (e *Engine) Launch(ctx context.Context, p LaunchParams) (*Run, error) {
	if e.isStopped() {
		return nil, ErrStopped
	}
	if err := e.opts.DiskGuard.Check(); err != nil {
		return nil, fmt.Errorf("launch %s: %w", p.Target, err)
	}
	prep, err := e.targets.Snapshot().Prepare(PrepareParams{Target: p.Target, Input: p.Input, Env: CaptureEnv(e.opts.EnvPass)})
	if err != nil {
		return nil, err
	}
	if p.SessionID != "" {
		if err := ids.Validate("session id", p.SessionID); err != nil {
			return nil, err
		}
	}
	wf, r := prep.Workflow, prep.Run
	r.Trigger, r.SessionID = p.Trigger, p.SessionID
	if r.Trigger.Kind == "" {
		r.Trigger.Kind = "manual"
	}
	now := e.now()
	r.CreatedAt = now
	var lock unlocker
	if !p.Detach {
		// Lock before the run exists, so no peer adopts it first, and
		// store it claimed by this process: one write fewer.
		if lock, err = e.locker.tryLock(r.ID); err != nil {
			return nil, fmt.Errorf("launch %s: %w", wf.Name, err)
		}
		r.Status, r.OwnerPID, r.Claim = store.RunRunning, e.pid, ids.New("claim")
		r.StartedAt = now.UTC().Truncate(time.Millisecond)
	}
	if err := e.st.CreateRun(ctx, r); err != nil {
		if lock != nil {
			lock.Unlock()
		}
		return nil, fmt.Errorf("launch %s: %w", wf.Name, err)
	}
	e.changed(r.ID)
	out := &Run{Run: *r, Steps: make([]Step, len(wf.Steps))}
	out.Claim = ""
	for i, s := range wf.Steps {
		out.Steps[i] = Step{ID: s.ID, Kind: string(s.Kind), Status: StepPending}
	}
	if p.Detach {
		e.kickLoop()
		return out, nil
	}
	claimed := *r
	if !e.startExecution(r.ID, lock, &claimed, &launchedRun{wf: wf, input: prep.Input, env: prep.Env}) {
		lock.Unlock() // stopped meanwhile: a peer adopts the run
	}
	return out, nil
}

func (e *Engine) isStopped() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopped
}

// Stop ends the peer loop and every execution in this process, and waits
// for them. Executions stop at their next step boundary and release their
// runs for another peer to resume. An exec or shell step still in flight
// after StopGrace goes on under its supervisor, and the peer that resumes
// the run re-attaches to it; another step (an http request, any step of
// an in-memory engine) is stopped, and that peer treats it as
// interrupted. Stop is idempotent.
func (e *Engine) Stop() {
	e.mu.Lock()
	first := !e.stopped
	e.stopped = true
	stop, done := e.loopStop, e.loopDone
	e.mu.Unlock()
	if first {
		close(e.stopping)
	}
	if stop != nil {
		stop()
		<-done
	}
	// After StopGrace, steps still in flight are stopped.
	hard := e.clk.NewTimer(e.opts.StopGrace)
	waited := make(chan struct{})
	go func() {
		select {
		case <-hard.C():
			e.cancel(errStopping)
		case <-waited:
		}
	}()
	e.wg.Wait()
	close(waited)
	hard.Stop()
	e.cancel(errStopping)
	e.locker.close()
	if jw, ok := e.journals.(journalWatcher); ok {
		jw.closeWatch()
	}
}
