package automations

import (
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/syncbuf"
	"github.com/cairnhq/cairn/store"
)

func TestSlotIsPreparedAheadAndFiredInOneBatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cs, _ := e.counted()
	const n = 5
	var as []*store.Automation
	for i := range n {
		as = append(as, e.create(Spec{Key: "k" + strconv.Itoa(i), Cron: "* * * * *", TZ: "UTC"}))
	}
	e.create(Spec{Key: "tidy", Every: "10m"})
	e.targets.prepared.Store(0) // creating checks the target
	slot := t0.Add(time.Minute)

	// Long before the slot the leader only plans to wake up Ahead of it.
	if wake := e.tick(t0.Add(10 * time.Second)); !wake.Equal(slot.Add(-e.sched.cfg.Ahead)) {
		t.Fatalf("wake at %v, want Ahead before the slot", wake.Sub(t0))
	}
	if got := e.targets.prepared.Load(); got != 0 {
		t.Fatalf("%d runs prepared a minute ahead", got)
	}
	// Ahead of it, the runs are prepared; nothing fires yet.
	if wake := e.tick(slot.Add(-e.sched.cfg.Ahead)); !wake.Equal(slot) {
		t.Fatalf("wake at %v, want the slot", wake.Sub(t0))
	}
	if got, batches := e.targets.prepared.Load(), e.targets.batches.Load(); got != n || batches != 1 {
		t.Fatalf("%d runs prepared in %d batches, want %d in one", got, batches, n)
	}
	if e.runCount() != 0 {
		t.Fatal("a prepared fire was committed before its slot")
	}
	// A pass in between (a notify) reuses what was prepared.
	e.tick(slot.Add(-time.Second))
	if got := e.targets.prepared.Load(); got != n {
		t.Fatalf("%d runs prepared after a second pass, want %d", got, n)
	}
	// At the slot: one batch with every fire, committed at the slot.
	e.tick(slot)
	if batches, singles := cs.counts(); len(batches) != 1 || batches[0] != n || singles != 0 {
		t.Fatalf("batches %v and %d single fires, want one batch of %d", batches, singles, n)
	}
	for _, a := range as {
		fs := e.fires(a.ID)
		if len(fs) != 1 || !fs[0].Nominal.Equal(slot) || fs[0].Lag != 0 || fs[0].Outcome != store.FireQueued {
			t.Fatalf("%s: fires %v", a.Key, nominals(fs))
		}
		st := e.get(a.ID).State
		if !st.Cursor.Equal(slot) || !st.NextDue.Equal(slot.Add(time.Minute)) || st.Fires != 1 || st.Missed != 0 {
			t.Fatalf("%s: state %+v", a.Key, st)
		}
	}
	if e.runCount() != n || e.targets.prepared.Load() != n {
		t.Fatalf("%d runs, %d prepared, want %d", e.runCount(), e.targets.prepared.Load(), n)
	}
	// The next slot goes the same way.
	e.slot(slot.Add(time.Minute))
	if batches, singles := cs.counts(); len(batches) != 2 || batches[1] != n || singles != 0 {
		t.Fatalf("batches %v and %d single fires", batches, singles)
	}
}

// A prepared fire is only used while nothing it was built from changed;
// otherwise the pass at the slot fires the slot from a fresh read.
func TestPreparedFireGivesWayToChanges(t *testing.T) {
	t.Parallel()
	slot := t0.Add(time.Minute)
	for _, tc := range []struct {
		name   string
		change func(e *env, vt *versionedTargets, a *store.Automation)
		at     time.Time // when the leader wakes for the slot
		check  func(t *testing.T, e *env, a *store.Automation)
	}{
		{
			name: "input edited",
			change: func(e *env, _ *versionedTargets, a *store.Automation) {
				if _, err := e.svc.Update(e.ctx, UpdateParams{Ref: a.Key, Input: json.RawMessage(`{"n":2}`)}); err != nil {
					e.t.Fatal(err)
				}
			},
			check: func(t *testing.T, e *env, a *store.Automation) {
				fs := e.fires(a.ID)
				if len(fs) != 1 || !fs[0].Nominal.Equal(slot) {
					t.Fatalf("fires %v", nominals(fs))
				}
				r, err := e.store.GetRun(e.ctx, fs[0].RunID)
				if err != nil || string(r.Input) != `{"n":2}` {
					t.Fatalf("fired run input %s, %v; want the edited input", r.Input, err)
				}
			},
		},
		{
			name: "targets changed",
			change: func(e *env, vt *versionedTargets, _ *store.Automation) {
				vt.version.Add(1)
			},
			check: func(t *testing.T, e *env, a *store.Automation) {
				if fs := e.fires(a.ID); len(fs) != 1 || !fs[0].Nominal.Equal(slot) {
					t.Fatalf("fires %v", nominals(fs))
				}
				if got := e.targets.prepared.Load(); got != 2 {
					t.Fatalf("%d runs prepared, want 2 (the first discarded)", got)
				}
			},
		},
		{
			name: "paused",
			change: func(e *env, _ *versionedTargets, a *store.Automation) {
				if _, err := e.svc.Pause(e.ctx, a.Key, "maintenance"); err != nil {
					e.t.Fatal(err)
				}
			},
			check: func(t *testing.T, e *env, a *store.Automation) {
				if fs := e.fires(a.ID); len(fs) != 0 || e.runCount() != 0 {
					t.Fatalf("fires %v of a paused automation", nominals(fs))
				}
			},
		},
		{
			name: "deleted",
			change: func(e *env, _ *versionedTargets, a *store.Automation) {
				if _, err := e.svc.Delete(e.ctx, DeleteParams{Ref: a.Key}); err != nil {
					e.t.Fatal(err)
				}
			},
			check: func(t *testing.T, e *env, a *store.Automation) {
				if e.runCount() != 0 {
					t.Fatal("a deleted automation fired")
				}
			},
		},
		{
			name: "slot fired by another scheduler",
			change: func(e *env, _ *versionedTargets, _ *store.Automation) {
				other := e.newScheduler()
				e.clock.Set(slot)
				other.step(e.ctx)
			},
			check: func(t *testing.T, e *env, a *store.Automation) {
				if fs := e.fires(a.ID); len(fs) != 1 || e.runCount() != 1 {
					t.Fatalf("fires %v, %d runs; want one", nominals(fs), e.runCount())
				}
			},
		},
		{
			// Woken after the next slot: the prepared fire is not that
			// slot's, so the pass decides (the latest slot fires, one
			// second late; the prepared one is missed).
			name: "woke after the next slot",
			at:   slot.Add(time.Minute + time.Second),
			check: func(t *testing.T, e *env, a *store.Automation) {
				fs := e.fires(a.ID)
				if len(fs) != 1 || !fs[0].Nominal.Equal(slot.Add(time.Minute)) || fs[0].Lag != time.Second {
					t.Fatalf("fires %v", nominals(fs))
				}
				if st := e.get(a.ID).State; st.Missed != 1 {
					t.Fatalf("missed %d, want 1", st.Missed)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			cs, vt := e.counted()
			a := e.create(Spec{Key: "k", Cron: "* * * * *", TZ: "UTC", Input: json.RawMessage(`{"n":1}`)})
			e.targets.prepared.Store(0) // creating checks the target
			e.tick(slot.Add(-e.sched.cfg.Ahead))
			if got := e.targets.prepared.Load(); got != 1 {
				t.Fatalf("%d runs prepared", got)
			}
			if tc.change != nil {
				tc.change(e, vt, a)
			}
			at := tc.at
			if at.IsZero() {
				at = slot
			}
			e.tick(at)
			tc.check(t, e, a)
			if _, singles := cs.counts(); singles > 1 {
				t.Fatalf("%d single fires after the batch", singles)
			}
		})
	}
}

// The leader's own timers: it wakes Ahead of the slot to prepare it and at
// the slot to commit it, in one batch.
func TestLeaderFiresPreparedSlotOnItsTimer(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cs := &countingStore{Store: e.store, batched: make(chan struct{}, 4)}
	e.sched = New(Config{Store: cs, LocksDir: e.svc.LocksDir, Targets: e.targets, Workspace: e.dir, Clock: e.clock, Runs: e.runs, Check: time.Hour})
	const n = 3
	for i := range n {
		e.create(Spec{Key: "k" + strconv.Itoa(i), Cron: "* * * * *", TZ: "UTC"})
	}
	e.targets.prepared.Store(0) // creating checks the target
	sg := watch(e.sched)
	if err := e.sched.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer e.sched.Stop()
	slot := t0.Add(time.Minute)
	sg.next(t, "the leader leads")
	sg.next(t, "the first tick")
	if got := e.clock.Timers(); got != 3 {
		t.Fatalf("%d timers after the first tick, want the wake, check and lease renewal timers", got)
	}
	e.clock.Set(slot.Add(-e.sched.cfg.Ahead))
	sg.next(t, "the tick Ahead of the slot")
	if got := e.targets.prepared.Load(); got != n {
		t.Fatalf("%d runs prepared Ahead of the slot, want %d", got, n)
	}
	if e.runCount() != 0 {
		t.Fatal("fired before the slot")
	}
	e.clock.Set(slot)
	<-cs.batched
	if batches, singles := cs.counts(); len(batches) != 1 || batches[0] != n || singles != 0 {
		t.Fatalf("batches %v, %d single fires; want one batch of %d", batches, singles, n)
	}
	if e.runCount() != n {
		t.Fatalf("%d runs, want %d", e.runCount(), n)
	}
}

// The log has each fire of a prepared slot at info, naming its automation
// and run (a worker's log is how a person finds what fired), besides the
// slot's summary.
func TestPreparedSlotLogsEachFire(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var buf syncbuf.Buffer
	vt := &versionedTargets{stubTargets: e.targets}
	e.sched = New(Config{Store: e.store, LocksDir: e.svc.LocksDir, Targets: vt, Workspace: e.dir, Clock: e.clock, Runs: e.runs,
		Log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	a := e.create(Spec{Key: "nightly", Cron: "* * * * *", TZ: "UTC"})
	b := e.create(Spec{Key: "hourly", Cron: "* * * * *", TZ: "UTC"})
	e.slot(t0.Add(time.Minute))
	log := buf.String()
	if !strings.Contains(log, `msg="fired prepared slot"`) || !strings.Contains(log, "fires=2") {
		t.Fatalf("no slot summary:\n%s", log)
	}
	for _, x := range []*store.Automation{a, b} {
		fs := e.fires(x.ID)
		if len(fs) != 1 {
			t.Fatalf("%s: %d fires", x.Key, len(fs))
		}
		if want := "msg=fired automation=" + x.Key + " slot=" + t0.Add(time.Minute).Format("2006-01-02T15:04:05.000Z07:00") + " run=" + fs[0].RunID + "\n"; !strings.Contains(log, want) {
			t.Fatalf("log lacks %q:\n%s", want, log)
		}
	}
}
