package runs

import (
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// Most peers of these tests run on a fake clock that the test does not
// advance (unless it says so): their poll and sweep timers never fire, so
// whatever they do was woken by an event (an owner's exit, the next wake
// time).

// waitStore waits, with a generous deadline, until cond holds, looking
// again after each commit to te's database by any process.
func waitStore(t *testing.T, te *testEnv, what string, cond func(*store.Run) bool, id string) *store.Run {
	t.Helper()
	c, stop, err := te.st.(*sqlite.Store).WatchCommits()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		r, err := te.st.GetRun(te.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if cond(r) {
			return r
		}
		select {
		case <-c:
		case <-deadline.C:
			t.Fatalf("never %s: %+v", what, r)
		}
	}
}

func TestWaitingPeerAdoptsWhenTheOwnerDies(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"hold.yaml": "steps:\n  - id: hold\n    shell: 'sleep 30'\n    safe_to_repeat: true\n"})
	child, stderr, id := te.launchChild("launch", "hold", "")
	waitStore(t, te, "the child runs its step", func(r *store.Run) bool {
		return r.Status == store.RunRunning && r.OwnerPID == child.Process.Pid
	}, id)
	fake := clock.NewFake(time.Now())
	peer := te.engine(func(o *Options) { o.Clock = fake })
	if err := peer.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	// The peer's first pass found the run held: it waits on its owner.
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	// Unless the owner died between the pass's lock test and the watch:
	// the peer then asks for a pass after AdoptEvery, which this clock
	// holds back; only after a while is the clock let go on.
	nudged, adopted := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(nudged)
		select {
		case <-time.After(10 * time.Second):
			fake.Advance(time.Second)
		case <-adopted:
		}
	}()
	waitStore(t, te, "adopted by the peer", func(r *store.Run) bool { return r.OwnerPID == peer.PID() }, id)
	close(adopted)
	<-nudged
	if _, err := peer.Cancel(te.ctx, id); err != nil {
		t.Fatalf("cancel: %v\n%s", err, stderr)
	}
	if r := te.wait(peer, id); r.Status != store.RunCancelled {
		t.Fatalf("after the cancel: %s", r.Status)
	}
}

// TestWaitingPeerAdoptsAQueuedRun: a run queued by another engine is
// adopted by a waiting peer (on the real clock: the look at a commit is
// rate-limited by AdoptEvery, which a fake clock would hold back).
func TestWaitingPeerAdoptsAQueuedRun(t *testing.T) {
	t.Parallel()
	// An ask: the adopting peer parks the run on it.
	te := setup(t, map[string]string{"one.yaml": "steps:\n  - id: q\n    ask: \"Go on?\"\n"})
	peer := te.engine()
	if err := peer.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	// Queued by another engine, not started: only the peer executes it.
	r, err := te.e.Launch(te.ctx, LaunchParams{Target: "one", Detach: true})
	if err != nil {
		t.Fatal(err)
	}
	if done := te.wait(peer, r.ID); done.Status != store.RunWaiting || done.Question == nil {
		t.Fatalf("queued run: %s %s, want parked on its question by the peer", done.Status, done.Error)
	}
}

func TestWaitingPeerWakesADurableSleepOnTime(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Now())
	te := setup(t, map[string]string{"nap.yaml": "steps:\n  - id: nap\n    sleep: 1s\n  - id: after\n    exec: [\"true\"]\n"},
		func(o *Options) { o.ParkSleepsOver = 50 * time.Millisecond; o.Clock = clk })
	r := te.launch("nap", "")
	waitFor(t, te.e, "parked", func() bool {
		got, err := te.st.GetRun(te.ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Status == store.RunWaiting
	})
	waitIdle(t, te.e)
	peer := te.engine(func(o *Options) { o.ParkSleepsOver = 50 * time.Millisecond; o.Clock = clk })
	if err := peer.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	// The peer's one timer is set to the wake time (NextWake), well
	// before its sweep: advancing to it, and not past, wakes the run.
	clk.BlockUntil(1)
	clk.Advance(time.Second)
	if done := te.wait(peer, r.ID); done.Status != store.RunSucceeded {
		t.Fatalf("after the sleep: %s %s", done.Status, done.Error)
	}
}
