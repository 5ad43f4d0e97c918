package automations

import (
	"context"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/store"
)

// events collects a scheduler's hook events.
func events(s *Scheduler) chan string {
	c := make(chan string, 256)
	s.hook = func(event string) { c <- event }
	return c
}

// await reads events until want.
func await(t *testing.T, c chan string, who, want string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case ev := <-c:
			if ev == want {
				return
			}
		case <-deadline:
			t.Fatalf("gave up waiting for %s to %s", who, want)
		}
	}
}

// awaitAdvancing moves c a second at a time until want arrives: a timer
// armed just after an Advance would otherwise wait for a move that never
// comes.
func awaitAdvancing(t *testing.T, ch chan string, c *clock.Fake, who, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		c.Advance(time.Second)
		wait := time.After(500 * time.Millisecond)
	drain:
		for {
			select {
			case ev := <-ch:
				if ev == want {
					return
				}
			case <-wait:
				break drain
			}
		}
	}
	t.Fatalf("gave up waiting for %s to %s", who, want)
}

// Two schedulers with their own fake clocks: a's stands still (a stopped
// process) while b's moves past a's lease, so b takes the lead though a
// keeps locks/scheduler. When a's clock moves again it finds its lease
// lost and follows; every slot is fired once.
func TestLeaderThatLostItsLeaseFollows(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.create(Spec{Key: "beat", Every: "1s", Overlap: "allow"})
	// a renews its lease (5 s) by t0+1s at the latest, so b, whose clock
	// reads past that lease when it starts, takes over though a keeps the
	// lock. (Setting b's clock after its start would race with the timer
	// b arms to wait for the lease.)
	clockA, clockB := e.clock, clock.NewFake(t0.Add(time.Second+5*time.Second+500*time.Millisecond))
	newSched := func(c clock.Clock) *Scheduler {
		return New(Config{Store: e.store, LocksDir: e.svc.LocksDir, Targets: e.targets, Workspace: e.dir, Clock: c, Runs: e.runs, Check: time.Hour})
	}
	a, b := newSched(clockA), newSched(clockB)
	ea, eb := events(a), events(b)
	if err := a.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	await(t, ea, "a", eventLead)
	await(t, ea, "a", eventTick)
	clockA.Advance(time.Second)
	e.waitRuns(t, ea, 1)

	if err := b.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	await(t, eb, "b", eventLead)
	e.waitRuns(t, eb, 2)
	if !a.Leading() {
		t.Fatal("a noticed it lost the lead although its clock stood still")
	}

	// a's renewal (or its next fire) finds the lease lost. Its timers may
	// be armed only after an Advance, so move its clock until it notices.
	awaitAdvancing(t, ea, clockA, "a", eventLeft)
	if a.Leading() || !b.Leading() {
		t.Fatalf("after a woke: a leading %v, b leading %v", a.Leading(), b.Leading())
	}
	clockB.Advance(time.Second)
	e.waitRuns(t, eb, 3)
	seen := map[time.Time]bool{}
	rs, _, err := e.store.ListRuns(context.Background(), store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if seen[r.Trigger.Nominal] {
			t.Errorf("slot %s fired twice", r.Trigger.Nominal)
		}
		seen[r.Trigger.Nominal] = true
	}
}

// waitRuns waits, on the scheduler's ticks, until n runs are queued.
func (e *env) waitRuns(t *testing.T, c chan string, n int) {
	t.Helper()
	for e.runCount() < n {
		await(t, c, "the leader", eventTick)
	}
	if got := e.runCount(); got != n {
		t.Fatalf("%d runs, want %d", got, n)
	}
}
