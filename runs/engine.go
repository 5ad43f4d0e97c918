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
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
	"github.com/cairnhq/cairn/workspace"
)

// Options configure an Engine. Store and Workspace are required; the rest
// have defaults.
type Options struct {
	Store     store.Store
	Workspace *workspace.Workspace
	// Targets finds workflows; default DirTargets(Workspace.WorkflowsDir()).
	Targets Targets
	Clock   clock.Clock  // default: the wall clock
	Logger  *slog.Logger // default: discard
	// InMemory keeps journals and run locks in this process: nothing is
	// written under the state dir (--dry-run, tests with the memory store).
	InMemory bool
	// OnChange, when set, is called (from any goroutine, never while the
	// engine holds a lock) after this engine changed a run or its journal,
	// and, while the peer loop runs, when it notices a change made by
	// another process.
	OnChange func(runID string)

	MaxConcurrent int // runs executing at once that the peer loop adopts up to; default 8
	// AdoptEvery is the peer loop's period: how soon a run whose owner
	// died, a queued run or a waiting run whose time came is picked up.
	// A pass is one indexed query and a lock test per candidate; default
	// 100ms.
	AdoptEvery time.Duration
	CancelPoll time.Duration // how often an owner checks for a cancel request; default 250ms
	KillGrace  time.Duration // SIGTERM to SIGKILL; default 5s
	// StopGrace is how long Stop lets a step in flight finish before it
	// stops it (its run is then released with the step interrupted);
	// default 10s.
	StopGrace      time.Duration
	ParkSleepsOver time.Duration // sleeps longer than this park the run; default 5s
	OutputCap      int           // bytes of each stream kept in a step's result; default 1 MiB
	HTTPTimeout    time.Duration // default timeout of http steps; default 60s
	HTTPClient     *http.Client  // default: a client without cookies that follows redirects
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
	opts.HTTPTimeout = cmp.Or(opts.HTTPTimeout, 60*time.Second)
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
// *workflows.InputError.
func (e *Engine) Launch(ctx context.Context, p LaunchParams) (*Run, error) {
	if e.isStopped() {
		return nil, ErrStopped
	}
	wf, err := e.targets.Target(p.Target)
	if err != nil {
		return nil, err
	}
	input, err := wf.ValidateInput(p.Input)
	if err != nil {
		return nil, err
	}
	lits, err := Literals(wf, input)
	if err != nil {
		return nil, err
	}
	in, err := InputJSON(input)
	if err != nil {
		return nil, err
	}
	if p.SessionID != "" {
		if err := ids.Validate("session id", p.SessionID); err != nil {
			return nil, err
		}
	}
	trig := p.Trigger
	if trig.Kind == "" {
		trig.Kind = "manual"
	}
	r := &store.Run{
		ID:        ids.New("run"),
		Target:    wf.Name,
		Status:    store.RunQueued,
		Input:     in,
		Literals:  lits,
		Trigger:   trig,
		SessionID: p.SessionID,
	}
	var lock unlocker
	if !p.Detach {
		// Lock before the run exists, so no peer adopts it first, and
		// store it claimed by this process: one write fewer.
		if lock, err = e.locker.tryLock(r.ID); err != nil {
			return nil, fmt.Errorf("launch %s: %w", wf.Name, err)
		}
		r.Status, r.OwnerPID, r.Claim = store.RunRunning, e.pid, ids.New("claim")
		r.StartedAt = time.Now().UTC().Truncate(time.Millisecond)
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
	if !e.startExecution(r.ID, lock, &claimed, &launchedRun{wf: wf, input: input}) {
		lock.Unlock() // stopped meanwhile: a peer adopts the run
	}
	return out, nil
}

// launchedRun is what Launch parsed and validated: the workflow its
// literals hold and the validated input.
type launchedRun struct {
	wf    *workflows.Workflow
	input map[string]any
}

// Get returns a run with its steps.
func (e *Engine) Get(ctx context.Context, id string) (*Run, error) {
	if err := ids.Validate("run id", id); err != nil {
		return nil, err
	}
	r, err := e.st.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	return e.view(ctx, r, true)
}

// ListParams select runs.
type ListParams struct {
	Status []store.RunStatus
	Target string
	Limit  int    // default 50, at most 1000
	Cursor string // from a previous page
}

// List returns runs newest first, with their steps as the ledger records
// them, and the cursor of the next page ("" at the end).
func (e *Engine) List(ctx context.Context, p ListParams) ([]*Run, string, error) {
	for _, s := range p.Status {
		if !s.Valid() {
			return nil, "", fmt.Errorf("list runs: unknown status %q (use queued, running, waiting, succeeded, failed or cancelled)", s)
		}
	}
	if p.Target != "" {
		if err := ids.Validate("target", p.Target); err != nil {
			return nil, "", err
		}
	}
	rs, next, err := e.st.ListRuns(ctx, store.RunFilter{Status: p.Status, Target: p.Target, Limit: p.Limit, Cursor: p.Cursor})
	if err != nil {
		return nil, "", err
	}
	out := make([]*Run, 0, len(rs))
	for _, r := range rs {
		v, err := e.view(ctx, r, false)
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	return out, next, nil
}

// AnswerParams answer a waiting run's question.
type AnswerParams struct {
	RunID string
	// QuestionID, when set, must name the open question (so an answer
	// meant for an earlier question is refused).
	QuestionID string
	Answer     string
}

// maxAnswer bounds an answer's length.
const maxAnswer = 64 << 10

// Answer stores the answer to the question a waiting run asks; the run
// then resumes in this process (when its peer loop runs) or in any live
// peer. A run that is not waiting gives a *StateError ("run <id> is not
// waiting (status: <status>)"); an answer outside the question's choices
// an *AnswerError.
func (e *Engine) Answer(ctx context.Context, p AnswerParams) (*Run, error) {
	if err := ids.Validate("run id", p.RunID); err != nil {
		return nil, err
	}
	r, err := e.st.GetRun(ctx, p.RunID)
	if err != nil {
		return nil, err
	}
	q := r.Question
	if r.Status != store.RunWaiting || q == nil {
		return nil, &StateError{ID: r.ID, Status: r.Status, Op: "answer"}
	}
	if p.QuestionID != "" && p.QuestionID != q.ID {
		return nil, fmt.Errorf("answer run %s: question %s is no longer open (the open one is %s)", r.ID, p.QuestionID, q.ID)
	}
	if err := checkAnswer(r.ID, p.Answer, q.Choices); err != nil {
		return nil, err
	}
	r, err = e.st.AnswerRun(ctx, store.AnswerParams{ID: r.ID, QuestionID: q.ID, Answer: p.Answer})
	if err != nil {
		return nil, err
	}
	e.appendRecord(r.ID, Record{Type: RecordAnswer, PID: e.pid, Step: q.Step, Text: p.Answer, Question: q})
	e.changed(r.ID)
	e.kickLoop()
	return e.view(ctx, r, true)
}

func checkAnswer(runID, answer string, choices []string) error {
	bad := func(reason string) error {
		return &AnswerError{RunID: runID, Answer: answer, Choices: choices, Reason: reason}
	}
	switch {
	case len(answer) > maxAnswer:
		return bad(fmt.Sprintf("the answer is longer than %d bytes", maxAnswer))
	case !jsonSafe(answer):
		return bad("the answer must be UTF-8 text without NUL bytes")
	}
	if len(choices) == 0 {
		return nil
	}
	for _, c := range choices {
		if c == answer {
			return nil
		}
	}
	return bad(fmt.Sprintf("%q is not one of the choices: %s", shorten(answer, 40), quoteList(choices)))
}

// Cancel cancels a run. A queued or waiting run is cancelled at once; a
// running one is stopped by its owner within about CancelPoll (its step's
// process group gets SIGTERM, then SIGKILL after KillGrace); a running run
// whose owner died is cancelled here. A settled run gives a *StateError.
func (e *Engine) Cancel(ctx context.Context, id string) (*Run, error) {
	if err := ids.Validate("run id", id); err != nil {
		return nil, err
	}
	reason := fmt.Sprintf("cancelled (requested by pid %d)", e.pid)
	r, err := e.st.CancelRun(ctx, id, reason)
	if err != nil {
		return nil, err
	}
	e.changed(id)
	if r.Status == store.RunCancelled {
		w := e.openJournal(id)
		if size, err := e.journals.size(id); err == nil && size == 0 {
			// Cancelled before any process claimed it: the journal still
			// starts with its start record.
			w.add(Record{Type: RecordStart, Run: id, Target: r.Target})
		}
		w.add(Record{Type: RecordEnd, Status: string(store.RunCancelled), Error: r.Error})
		w.close()
		return e.view(ctx, r, true)
	}
	// Running: tell our own execution at once, or take over an orphan.
	e.mu.Lock()
	x := e.active[id]
	e.mu.Unlock()
	if x != nil {
		x.cancel(errCancelRequested)
	} else if lock, err := e.locker.tryLock(id); err == nil {
		e.settleOrphanCancel(ctx, id, lock)
	}
	r, err = e.st.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	return e.view(ctx, r, true)
}

// settleOrphanCancel cancels a running run whose owner is gone: we hold
// its lock, so we claim it and settle it cancelled.
func (e *Engine) settleOrphanCancel(ctx context.Context, id string, lock unlocker) {
	defer lock.Unlock()
	claim := ids.New("claim")
	c, err := e.st.ClaimRun(ctx, store.ClaimParams{ID: id, Claim: claim, PID: e.pid, Now: e.now()})
	if err != nil {
		return
	}
	reason := fmt.Sprintf("cancelled (requested by pid %d; the previous owner pid %d was gone)", e.pid, c.PrevOwnerPID)
	if _, err := e.st.SettleRun(ctx, store.SettleParams{ID: id, Claim: claim, Status: store.RunCancelled, Error: reason}); err != nil {
		e.log.Warn("cancel run", "run", id, "err", err)
		return
	}
	w := e.openJournal(id)
	if size, err := e.journals.size(id); err == nil && size == 0 {
		// The owner died before its first records reached the journal.
		w.add(Record{Type: RecordStart, Run: id, Target: c.Run.Target})
	}
	w.add(Record{Type: RecordEnd, Status: string(store.RunCancelled), Error: reason})
	w.close()
	e.changed(id)
}

// Resume executes run id in this process if it is runnable, not executing
// here already, and its lock is free. It reports whether it started.
func (e *Engine) Resume(ctx context.Context, id string) (bool, error) {
	if err := ids.Validate("run id", id); err != nil {
		return false, err
	}
	if e.isStopped() {
		return false, ErrStopped
	}
	e.mu.Lock()
	_, busy := e.active[id]
	e.mu.Unlock()
	if busy {
		return false, nil
	}
	lock, err := e.locker.tryLock(id)
	if errors.Is(err, locks.ErrHeld) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// Read after locking: the previous owner may have settled it since.
	r, err := e.st.GetRun(ctx, id)
	if err != nil || !r.Runnable(e.now()) {
		lock.Unlock()
		return false, err
	}
	if !e.startExecution(id, lock, nil, nil) {
		lock.Unlock()
		return false, ErrStopped
	}
	return true, nil
}

// Executing reports how many runs this engine is executing.
func (e *Engine) Executing() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.active)
}

// Busy reports whether there is run work for a peer to stay up for: runs
// executing here, or runs queued, running, or waiting with a wake time.
// Runs waiting only for an answer do not count: whoever answers starts
// the work again.
func (e *Engine) Busy(ctx context.Context) (bool, error) {
	if e.Executing() > 0 {
		return true, nil
	}
	n, err := e.st.CountPending(ctx)
	return n > 0, err
}

func (e *Engine) isStopped() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopped
}

// Start runs the peer loop until Stop: at once and then every AdoptEvery
// it adopts runnable runs whose lock is free (up to MaxConcurrent
// executing). It returns at once.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return ErrStopped
	}
	if e.loopDone != nil {
		return errors.New("start run engine: already started")
	}
	lctx, stop := context.WithCancel(ctx)
	e.loopStop = stop
	e.loopDone = make(chan struct{})
	go e.loop(lctx, e.loopDone)
	return nil
}

// Stop ends the peer loop and every execution in this process, and waits
// for them. Executions stop at their next step boundary and release their
// runs for another peer to resume; a step still in flight after StopGrace
// is stopped (its process group killed), and the peer that resumes the run
// treats it as interrupted. Stop is idempotent.
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
	hard := time.AfterFunc(e.opts.StopGrace, func() { e.cancel(errStopping) })
	e.wg.Wait()
	hard.Stop()
	e.cancel(errStopping)
	e.locker.close()
}

func (e *Engine) kickLoop() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

func (e *Engine) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	seen := &changeTracker{}
	for {
		e.adopt(ctx)
		if e.opts.OnChange != nil {
			e.noticeChanges(ctx, seen)
		}
		t := e.clk.NewTimer(e.opts.AdoptEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-e.kick:
			t.Stop()
		case <-t.C():
		}
	}
}

// adopt starts runnable runs whose owner is gone (or that nobody claimed).
func (e *Engine) adopt(ctx context.Context) {
	room := e.opts.MaxConcurrent - e.Executing()
	if room <= 0 {
		return
	}
	// Running runs whose owners live are listed too (only their lock
	// tells): look far enough past them.
	rs, err := e.st.RunnableRuns(ctx, e.now(), 256)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("list runnable runs", "err", err)
		}
		return
	}
	for _, r := range rs {
		if e.Executing() >= e.opts.MaxConcurrent || ctx.Err() != nil {
			return
		}
		if _, err := e.Resume(ctx, r.ID); err != nil && !errors.Is(err, ErrStopped) && ctx.Err() == nil {
			e.log.Warn("adopt run", "run", r.ID, "err", err)
		}
	}
}

// changeTracker is where the peer loop is in the store's sequence of run
// changes.
type changeTracker struct {
	last  int64
	ready bool // last is set
}

// noticeChanges calls OnChange for each run changed since the last call
// (changes of this engine included: a waiter ignores what it knew): one
// indexed query that returns each change once.
func (e *Engine) noticeChanges(ctx context.Context, t *changeTracker) {
	if !t.ready {
		last, err := e.st.LastRunChange(ctx)
		if err != nil {
			return
		}
		t.last, t.ready = last, true
		return
	}
	for {
		cs, err := e.st.ChangedRuns(ctx, t.last, store.MaxListLimit)
		if err != nil {
			return
		}
		for _, c := range cs {
			e.opts.OnChange(c.ID)
			t.last = c.Seq
		}
		if len(cs) < store.MaxListLimit || ctx.Err() != nil {
			return
		}
	}
}

// startExecution registers and starts an execution of run id, which the
// caller has locked; claimed, when set, is the run as Launch stored it,
// claimed already. It reports false when the engine is stopped.
func (e *Engine) startExecution(id string, lock unlocker, claimed *store.Run, launched *launchedRun) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return false
	}
	ctx, cancel := context.WithCancelCause(e.base)
	x := &execution{e: e, id: id, lock: lock, ctx: ctx, cancel: cancel, claimed: claimed, launched: launched}
	if claimed != nil {
		x.claim = claimed.Claim
	} else {
		x.claim = ids.New("claim")
	}
	e.active[id] = x
	e.wg.Add(1)
	if !e.watching {
		e.watching = true
		e.wg.Add(1)
		go e.watchOwned()
	}
	go func() {
		defer e.wg.Done()
		x.execute()
		e.mu.Lock()
		delete(e.active, id)
		none := len(e.active) == 0
		e.mu.Unlock()
		if none {
			select {
			case e.idle <- struct{}{}:
			default:
			}
		}
		cancel(nil)
		lock.Unlock()
		e.changed(id)
		e.kickLoop()
	}()
	return true
}

// runTable is the lock table (in the workspace's locks folder) holding
// every run's lock.
const runTable = "runs"

// watchOwned polls the store every CancelPoll while this engine executes
// runs, with one query for all of them: a cancel requested by another
// process cancels the execution, and a run whose claim was replaced (taken
// over) stops it. It returns when no execution is left.
func (e *Engine) watchOwned() {
	defer e.wg.Done()
	t := time.NewTicker(e.opts.CancelPoll)
	defer t.Stop()
	for {
		tick := false
		select {
		case <-t.C:
			tick = true
		case <-e.idle:
		}
		e.mu.Lock()
		if len(e.active) == 0 {
			e.watching = false
			e.mu.Unlock()
			return
		}
		var (
			ids   []string
			owned map[string]*execution
		)
		if tick {
			owned = make(map[string]*execution, len(e.active))
			for id, x := range e.active {
				if x.owned.Load() {
					ids = append(ids, id)
					owned[id] = x
				}
			}
		}
		e.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		claims, err := e.st.RunClaims(e.base, ids)
		if err != nil {
			continue
		}
		for _, c := range claims {
			x := owned[c.ID]
			switch {
			case c.Claim != x.claim && c.Status == store.RunRunning:
				x.cancel(errLost)
			case c.CancelRequested:
				x.cancel(errCancelRequested)
			}
		}
	}
}

// locker takes run locks, by run id: keys of the lock table locks/runs,
// or an in-process set.
type locker interface {
	tryLock(runID string) (unlocker, error)
	isHeld(runID string) (bool, error)
	// close lets go of what the locker keeps open; it may be used again
	// after.
	close()
}

type unlocker interface{ Unlock() error }

// fileLocker takes run locks in the table locks/runs, opened at first use.
type fileLocker struct {
	dir string
	mu  sync.Mutex
	t   *locks.Table
}

func (f *fileLocker) table(create bool) (*locks.Table, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.t != nil {
		return f.t, nil
	}
	open := locks.OpenExistingTable
	if create {
		open = locks.OpenTable
	}
	t, err := open(f.dir, runTable)
	if err != nil {
		return nil, err
	}
	f.t = t
	return t, nil
}

func (f *fileLocker) tryLock(id string) (unlocker, error) {
	t, err := f.table(true)
	if err != nil {
		return nil, err
	}
	l, err := t.TryLock(id)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (f *fileLocker) isHeld(id string) (bool, error) {
	t, err := f.table(false)
	if errors.Is(err, locks.ErrNoTable) {
		return false, nil // no run was ever locked here
	}
	if err != nil {
		return false, err
	}
	return t.Held(id)
}

func (f *fileLocker) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.t != nil {
		f.t.Close()
		f.t = nil
	}
}

type memLocker struct {
	mu   sync.Mutex
	held map[string]bool
}

func newMemLocker() *memLocker { return &memLocker{held: map[string]bool{}} }

func (m *memLocker) tryLock(id string) (unlocker, error) {
	if err := ids.Validate("run id", id); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[id] {
		return nil, &locks.HeldError{Name: id, Holder: locks.Holder{PID: os.Getpid()}}
	}
	m.held[id] = true
	return &memLock{m: m, id: id}, nil
}

func (m *memLocker) isHeld(id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held[id], nil
}

func (m *memLocker) close() {}

type memLock struct {
	m    *memLocker
	id   string
	once sync.Once
}

func (l *memLock) Unlock() error {
	l.once.Do(func() {
		l.m.mu.Lock()
		delete(l.m.held, l.id)
		l.m.mu.Unlock()
	})
	return nil
}
