package automations

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// The fires prepared for a slot are committed in slices of FireSlice,
// every fire recorded once, at the slot.
func TestPreparedSlotIsFiredInSlices(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cs, _ := e.counted()
	e.sched.cfg.FireSlice = 2
	const n = 11
	slot := t0.Add(time.Minute)
	as := fireOneSlot(e, n, slot)
	batches, singles := cs.counts()
	slices.Sort(batches)
	if !slices.Equal(batches, []int{1, 2, 2, 2, 2, 2}) || singles != 0 {
		t.Fatalf("batches %v and %d single fires, want five slices of 2 and the 1 left", batches, singles)
	}
	firedOnceEach(t, e, as, slot)
}

// A slice the store refuses leaves its fires, and those not yet handed to
// the store, to the pass after it: each slot still fires exactly once.
func TestFailedSliceLeavesFiresToThePass(t *testing.T) {
	t.Parallel()
	e := setup(t)
	fs := &failingFireMany{Store: e.store, failAt: 2}
	e.sched = New(Config{Store: fs, LocksDir: e.svc.LocksDir, Targets: e.targets, Workspace: e.dir, Clock: e.clock, Runs: e.runs, FireSlice: 2})
	const n = 7
	slot := t0.Add(time.Minute)
	as := fireOneSlot(e, n, slot)
	fs.mu.Lock()
	calls := fs.calls
	fs.mu.Unlock()
	if calls < fs.failAt {
		t.Fatalf("%d FireMany calls: the slice meant to fail was never handed over", calls)
	}
	firedOnceEach(t, e, as, slot)
}

// fireOneSlot creates n cron automations due every minute and wakes the
// leader Ahead of slot and at it.
func fireOneSlot(e *env, n int, slot time.Time) []*store.Automation {
	var as []*store.Automation
	for i := range n {
		as = append(as, e.create(Spec{Key: "k" + strconv.Itoa(i), Cron: "* * * * *", TZ: "UTC"}))
	}
	e.tick(slot.Add(-e.sched.cfg.Ahead))
	e.tick(slot)
	return as
}

// firedOnceEach checks that each of as fired once, at slot, its run queued.
func firedOnceEach(t *testing.T, e *env, as []*store.Automation, slot time.Time) {
	t.Helper()
	for _, a := range as {
		got := e.fires(a.ID)
		if len(got) != 1 || !got[0].Nominal.Equal(slot) || got[0].Outcome != store.FireQueued {
			t.Fatalf("%s: fires %v, want one at the slot", a.Key, nominals(got))
		}
	}
	if e.runCount() != len(as) {
		t.Fatalf("%d runs, want %d", e.runCount(), len(as))
	}
}

// failingFireMany refuses its failAt-th FireMany call (counting from 1)
// without writing anything.
type failingFireMany struct {
	store.Store
	mu     sync.Mutex
	calls  int
	failAt int
}

func (f *failingFireMany) FireMany(ctx context.Context, ps []store.FireParams) ([]store.FireOutcome, error) {
	f.mu.Lock()
	f.calls++
	fail := f.calls == f.failAt
	f.mu.Unlock()
	if fail {
		return nil, errors.New("disk full")
	}
	return f.Store.FireMany(ctx, ps)
}
