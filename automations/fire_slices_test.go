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

// The fires prepared for a slot are committed in slices, the first of
// FireSlice fires and each next one twice as big, every fire recorded
// once, at the slot.
func TestPreparedSlotIsFiredInSlices(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cs, _ := e.counted()
	e.sched.cfg.FireSlice = 2
	const n = 11
	var as []*store.Automation
	for i := range n {
		as = append(as, e.create(Spec{Key: "k" + strconv.Itoa(i), Cron: "* * * * *", TZ: "UTC"}))
	}
	slot := t0.Add(time.Minute)
	e.tick(slot.Add(-e.sched.cfg.Ahead))
	e.tick(slot)
	batches, singles := cs.counts()
	slices.Sort(batches)
	if !slices.Equal(batches, []int{2, 4, 5}) || singles != 0 {
		t.Fatalf("batches %v and %d single fires, want slices of 2, 4 and the 5 left", batches, singles)
	}
	for _, a := range as {
		fs := e.fires(a.ID)
		if len(fs) != 1 || !fs[0].Nominal.Equal(slot) || fs[0].Outcome != store.FireQueued {
			t.Fatalf("%s: fires %v", a.Key, nominals(fs))
		}
	}
	if e.runCount() != n {
		t.Fatalf("%d runs, want %d", e.runCount(), n)
	}
}

// A slice the store refuses leaves its fires, and those not yet handed to
// the store, to the pass after it: each slot still fires exactly once.
func TestFailedSliceLeavesFiresToThePass(t *testing.T) {
	t.Parallel()
	e := setup(t)
	fs := &failingFireMany{Store: e.store, failAt: 2}
	e.sched = New(Config{Store: fs, LocksDir: e.svc.LocksDir, Targets: e.targets, Workspace: e.dir, Clock: e.clock, Runs: e.runs, FireSlice: 2})
	const n = 7
	var as []*store.Automation
	for i := range n {
		as = append(as, e.create(Spec{Key: "k" + strconv.Itoa(i), Cron: "* * * * *", TZ: "UTC"}))
	}
	slot := t0.Add(time.Minute)
	e.tick(slot.Add(-e.sched.cfg.Ahead))
	e.tick(slot)
	fs.mu.Lock()
	calls := fs.calls
	fs.mu.Unlock()
	if calls < fs.failAt {
		t.Fatalf("%d FireMany calls: the slice meant to fail was never handed over", calls)
	}
	for _, a := range as {
		got := e.fires(a.ID)
		if len(got) != 1 || !got[0].Nominal.Equal(slot) || got[0].Outcome != store.FireQueued {
			t.Fatalf("%s: fires %v, want one at the slot", a.Key, nominals(got))
		}
	}
	if e.runCount() != n {
		t.Fatalf("%d runs, want %d", e.runCount(), n)
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
