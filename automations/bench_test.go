package automations

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/sqlite"
)

// slotClock reads a planned slot plus the real time elapsed since the slot
// was set, so a scheduler pass started at a slot sees real time passing.
type slotClock struct {
	mu          sync.Mutex
	slot, since time.Time
}

func (c *slotClock) set(slot time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slot, c.since = slot, time.Now()
}

func (c *slotClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slot.Add(time.Since(c.since))
}

func (c *slotClock) NewTimer(d time.Duration) clock.Timer { return clock.Real{}.NewTimer(d) }

// lagStore records, for each fire, the time from its nominal slot to the
// moment the store acknowledged it (committed).
type lagStore struct {
	store.Store
	clock *slotClock
	mu    sync.Mutex
	lags  []time.Duration
}

func (s *lagStore) Fire(ctx context.Context, p store.FireParams) (store.FireResult, error) {
	res, err := s.Store.Fire(ctx, p)
	if err == nil && !res.AlreadyFired {
		lag := s.clock.Now().Sub(p.Nominal)
		s.mu.Lock()
		s.lags = append(s.lags, lag)
		s.mu.Unlock()
	}
	return res, err
}

func (s *lagStore) FireMany(ctx context.Context, ps []store.FireParams) ([]store.FireOutcome, error) {
	outs, err := s.Store.FireMany(ctx, ps)
	if err != nil {
		return outs, err
	}
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, o := range outs {
		if o.Err == nil && !o.Result.AlreadyFired {
			s.lags = append(s.lags, now.Sub(ps[i].Nominal))
		}
	}
	return outs, err
}

// BenchmarkCronFireLag fires 1,000 cron automations due in the same minute.
// Each iteration is one minute slot, woken up as the leader's timers do:
// Config.Ahead before the slot (the fires are prepared: each a run of a
// real workflow file) and at the slot (they are committed), and the lag of
// a fire is the time from the slot to its commit (Fire or FireMany
// returned). It reports the p50, p99 and max lag over all fires, for the
// SQLite store (synchronous FULL) and, as the peer measured in the same
// run, the memory store.
func BenchmarkCronFireLag(b *testing.B) {
	for _, backend := range []string{"sqlite", "memory"} {
		b.Run("store="+backend+"/automations=1000", func(b *testing.B) { benchFireLag(b, backend, 1000) })
	}
}

func benchFireLag(b *testing.B, backend string, n int) {
	ctx := context.Background()
	dir := b.TempDir()
	wfDir := filepath.Join(dir, "workflows")
	writeFile(b, filepath.Join(wfDir, "tick.yaml"), "name: tick\nsteps:\n  - id: a\n    exec: [\"true\"]\n")
	var inner store.Store
	if backend == "sqlite" {
		s, err := sqlite.Open(ctx, filepath.Join(dir, "state.sqlite3"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		inner = s
	} else {
		inner = memory.New()
	}
	defer inner.Close()
	base := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	clk := &slotClock{}
	clk.set(base)
	st := &lagStore{Store: inner, clock: clk}
	targets := &WorkflowTargets{Dir: wfDir}
	svc := &Service{Store: st, LocksDir: filepath.Join(dir, "locks"), Targets: targets, Clock: clock.NewFake(base)}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := svc.Create(ctx, CreateParams{Owner: "bench", Spec: Spec{Key: fmt.Sprintf("a%04d", i), Target: "tick", Cron: "* * * * *", TZ: "UTC", Overlap: "allow"}})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	sched := New(Config{Store: st, LocksDir: svc.LocksDir, Targets: targets, Clock: clk})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// As the leader does: wake Ahead before the slot to prepare it,
		// then at the slot.
		slot := base.Add(time.Duration(i+1) * time.Minute)
		clk.set(slot.Add(-sched.cfg.Ahead))
		sched.tick(ctx)
		clk.set(slot)
		sched.tick(ctx)
	}
	b.StopTimer()
	lags := st.lags
	if len(lags) != n*b.N {
		b.Fatalf("%d fires, want %d", len(lags), n*b.N)
	}
	slices.Sort(lags)
	pct := func(p float64) float64 {
		return float64(lags[min(len(lags)-1, int(p*float64(len(lags))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(lags[len(lags)-1])/float64(time.Millisecond), "max-ms")
	b.ReportMetric(float64(n), "fires/op")
}
