package automations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/workflows"
)

// t0 is where fake clocks start: a Monday, 12:00 UTC.
var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// stubTargets knows the targets "hello" and "other"; while failing is set
// it refuses to prepare runs.
type stubTargets struct {
	failing  atomic.Bool
	prepared atomic.Int64
	batches  atomic.Int64 // PrepareAll calls
}

// PrepareAll prepares each request as Prepare does, counting the batch.
func (t *stubTargets) PrepareAll(ctx context.Context, reqs []PrepareRequest) ([]*store.Run, []error) {
	t.batches.Add(1)
	out, errs := make([]*store.Run, len(reqs)), make([]error, len(reqs))
	for i, r := range reqs {
		out[i], errs[i] = t.Prepare(ctx, r.Target, r.Input)
	}
	return out, errs
}

func (t *stubTargets) Prepare(ctx context.Context, target string, input json.RawMessage) (*store.Run, error) {
	if target != "hello" && target != "other" {
		return nil, &workflows.NotFoundError{Name: target}
	}
	if t.failing.Load() {
		return nil, errors.New("target is broken")
	}
	t.prepared.Add(1)
	return &store.Run{ID: ids.New("run"), Target: target, Input: input, Literals: json.RawMessage(`{}`)}, nil
}

// fakeRuns reads runs from the store, except that runs the test finished
// read as settled at the time it said.
type fakeRuns struct {
	store.Store
	mu   sync.Mutex
	done map[string]store.Run
}

func (f *fakeRuns) GetRun(ctx context.Context, id string) (*store.Run, error) {
	r, err := f.Store.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if d, ok := f.done[id]; ok {
		r.Status, r.FinishedAt = d.Status, d.FinishedAt
	}
	return r, nil
}

func (f *fakeRuns) finish(id string, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done[id] = store.Run{Status: store.RunSucceeded, FinishedAt: at}
}

// env is one in-process scheduler over a memory store and a fake clock.
type env struct {
	t       *testing.T
	ctx     context.Context
	clock   *clock.Fake
	store   store.Store
	runs    *fakeRuns
	targets *stubTargets
	svc     *Service
	sched   *Scheduler
	dir     string // workspace root
}

func setup(t *testing.T) *env {
	t.Helper()
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	return setupStore(t, st)
}

// setupStore is setup over st, which the caller closes.
func setupStore(t *testing.T, st store.Store) *env {
	t.Helper()
	e := &env{
		t: t, ctx: context.Background(), clock: clock.NewFake(t0), store: st,
		runs: &fakeRuns{Store: st, done: map[string]store.Run{}}, targets: &stubTargets{},
		dir: t.TempDir(),
	}
	e.svc = &Service{Store: st, LocksDir: t.TempDir(), Targets: e.targets, Clock: e.clock}
	e.sched = e.newScheduler()
	return e
}

// newScheduler returns a fresh scheduler over e's state, as a restarted
// process would have.
func (e *env) newScheduler() *Scheduler {
	return New(Config{Store: e.store, LocksDir: e.svc.LocksDir, Targets: e.targets, Workspace: e.dir, Clock: e.clock, Runs: e.runs})
}

func (e *env) create(sp Spec) *store.Automation {
	e.t.Helper()
	if sp.Target == "" {
		sp.Target = "hello"
	}
	res, err := e.svc.Create(e.ctx, CreateParams{Owner: "cli", Spec: sp})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Automation
}

// step runs one scheduler pass at the fake clock's time, waits for the
// monitor polls it started, and returns the next due time.
func (e *env) step() time.Time {
	e.t.Helper()
	next := e.sched.step(e.ctx)
	e.sched.polls.Wait()
	return next
}

// advanceTo sets the fake clock to at and runs a pass.
func (e *env) advanceTo(at time.Time) time.Time {
	e.t.Helper()
	e.clock.Set(at)
	return e.step()
}

func (e *env) get(id string) *store.Automation {
	e.t.Helper()
	a, err := e.store.GetAutomation(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// fires returns an automation's fires, oldest first.
func (e *env) fires(id string) []*store.AutomationFire {
	e.t.Helper()
	fs, err := e.store.ListFires(e.ctx, id, store.FireHistory)
	if err != nil {
		e.t.Fatal(err)
	}
	for i, j := 0, len(fs)-1; i < j; i, j = i+1, j-1 {
		fs[i], fs[j] = fs[j], fs[i]
	}
	return fs
}

func (e *env) runCount() int {
	e.t.Helper()
	c, err := e.store.Counts(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return c.Runs
}

// nominals formats fires' nominal times as offsets from t0, for messages.
func nominals(fs []*store.AutomationFire) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s:%s", f.Nominal.Sub(t0), f.Outcome))
	}
	return out
}

// signals is what a scheduler's leader did; tests wait on it instead of
// sleeping.
type signals struct{ c chan struct{} }

// watch makes s signal when it takes the lead and after every tick. Call
// it before Start.
func watch(s *Scheduler) *signals {
	sg := &signals{c: make(chan struct{}, 64)}
	s.hook = func(event string) {
		if event != eventLead && event != eventTick {
			return
		}
		select {
		case sg.c <- struct{}{}:
		default: // full: the waiter has signals to read and re-checks
		}
	}
	return sg
}

// next waits for the leader's next signal.
func (sg *signals) next(t *testing.T, what string) {
	t.Helper()
	timeout := time.Minute
	if dl, ok := t.Deadline(); ok {
		timeout = time.Until(dl) - time.Second
	}
	select {
	case <-sg.c:
	case <-time.After(timeout):
		t.Fatalf("gave up waiting: %s", what)
	}
}

// until waits until cond holds, looking again each time the leader
// signals.
func (sg *signals) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		sg.next(t, what)
	}
}

// countingStore counts the fires a scheduler hands to the store: the
// sizes of its FireMany batches and its single Fire calls. batched is
// signalled after each batch.
type countingStore struct {
	store.Store
	mu      sync.Mutex
	batches []int
	singles int
	batched chan struct{}
}

func (c *countingStore) Fire(ctx context.Context, p store.FireParams) (store.FireResult, error) {
	c.mu.Lock()
	c.singles++
	c.mu.Unlock()
	return c.Store.Fire(ctx, p)
}

func (c *countingStore) FireMany(ctx context.Context, ps []store.FireParams) ([]store.FireOutcome, error) {
	outs, err := c.Store.FireMany(ctx, ps)
	c.mu.Lock()
	c.batches = append(c.batches, len(ps))
	c.mu.Unlock()
	if c.batched != nil {
		c.batched <- struct{}{}
	}
	return outs, err
}

func (c *countingStore) counts() (batches []int, singles int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.batches...), c.singles
}

// versionedTargets are stubTargets whose definitions have a version.
type versionedTargets struct {
	*stubTargets
	version atomic.Int64
}

func (v *versionedTargets) Version() (string, error) {
	return strconv.FormatInt(v.version.Load(), 10), nil
}

// counted gives e a scheduler whose store counts fires, over targets with
// a version.
func (e *env) counted() (*countingStore, *versionedTargets) {
	cs := &countingStore{Store: e.store}
	vt := &versionedTargets{stubTargets: e.targets}
	e.sched = New(Config{Store: cs, LocksDir: e.svc.LocksDir, Targets: vt, Workspace: e.dir, Clock: e.clock, Runs: e.runs})
	return cs, vt
}

// tick sets the fake clock to at and runs one wake-up of the leader.
func (e *env) tick(at time.Time) time.Time {
	e.t.Helper()
	e.clock.Set(at)
	next := e.sched.tick(e.ctx)
	e.sched.polls.Wait()
	return next
}

// slot wakes the leader as its timers would around a slot: Ahead before
// it (to prepare it), then at it.
func (e *env) slot(at time.Time) {
	e.t.Helper()
	if wake := e.tick(at.Add(-e.sched.cfg.Ahead)); !wake.Equal(at) {
		e.t.Fatalf("prepared %v ahead, the leader wakes at %v, want the slot", e.sched.cfg.Ahead, wake.Sub(t0))
	}
	e.tick(at)
}
