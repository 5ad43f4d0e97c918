package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
)

// shiftedClock is the wall clock moved forward by a fixed offset: it runs
// at real speed and its timers are real timers, so lags measured on it are
// real lags. It lets a repetition put the next minute boundary a second or
// two away instead of waiting up to a minute for it.
type shiftedClock struct{ offset time.Duration }

func (c shiftedClock) Now() time.Time { return time.Now().Add(c.offset) }

func (c shiftedClock) NewTimer(d time.Duration) clock.Timer { return clock.Real{}.NewTimer(d) }

// fireTimer is the store as the scheduler sees it, timing each fire at the
// moment store.Fire returns: the fire row and its queued run are then
// committed, so the lag is the lag of a durable fire.
type fireTimer struct {
	store.Store
	clk   clock.Clock
	mu    sync.Mutex
	lags  []float64 // ms, durable fire minus nominal
	rec   []float64 // ms, the lag the store recorded (actual minus nominal)
	done  chan struct{}
	want  int
	calls int // store calls that committed at least one fire
}

func (f *fireTimer) Fire(ctx context.Context, p store.FireParams) (store.FireResult, error) {
	res, err := f.Store.Fire(ctx, p)
	if err != nil || res.AlreadyFired || res.Fire == nil || res.Fire.Outcome != store.FireQueued {
		return res, err
	}
	lag := ms(f.clk.Now().Sub(p.Nominal))
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.lags = append(f.lags, lag)
	f.rec = append(f.rec, ms(res.Fire.Lag))
	if len(f.lags) == f.want {
		close(f.done)
	}
	return res, err
}

// FireMany times each fire of a batch at the moment the batch returned
// (committed), as Fire does for one.
func (f *fireTimer) FireMany(ctx context.Context, ps []store.FireParams) ([]store.FireOutcome, error) {
	outs, err := f.Store.FireMany(ctx, ps)
	if err != nil {
		return outs, err
	}
	now := f.clk.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	counted := false
	for i, o := range outs {
		res := o.Result
		if o.Err != nil || res.AlreadyFired || res.Fire == nil || res.Fire.Outcome != store.FireQueued {
			continue
		}
		if !counted {
			f.calls, counted = f.calls+1, true
		}
		f.lags = append(f.lags, ms(now.Sub(ps[i].Nominal)))
		f.rec = append(f.rec, ms(res.Fire.Lag))
		if len(f.lags) == f.want {
			close(f.done)
		}
	}
	return outs, err
}

// figFireLag measures figure 4: 1,000 cron automations due at the same
// minute boundary, fired by one scheduler in a process that also runs the
// run engine's peer loop (as every mcp-host process does).
func figFireLag(ctx context.Context, b *bench) error {
	n, lead := 1000, 1500*time.Millisecond
	if b.short {
		n, lead = 20, 500*time.Millisecond
	}
	b.rec.declare(4, "fire lag p50", "ms", atMost(5))
	b.rec.declare(4, "fire lag p99", "ms", atMost(20))
	b.rec.note(4, "%s automations `* * * * *` created through automations.Service, then a scheduler started on a clock shifted so that the next minute boundary is %s away (the clock runs at real speed with real timers; this saves waiting for a real minute). The scheduler commits the fires in slices (automations.Config.FireSlice, default 100, two in flight); as a diagnostic, the same slot in one transaction (one slice holding every fire), in the same repetition. Each fire's lag = the time the store call that recorded it (store.Fire, or the store.FireMany of its slice) returned, its fire and queued run committed, minus the nominal time; the percentiles are over every fire of a repetition. The lag the store records (when the fire was handed to it) is shown too.", count(n), lead)
	for rep := range b.reps {
		lags, recorded, calls, err := fireLagOnce(ctx, b, rep, n, 0, lead)
		if err != nil {
			return err
		}
		one, _, _, err := fireLagOnce(ctx, b, rep, n, n, lead)
		if err != nil {
			return err
		}
		b.rec.add(4, "diagnostic: all fires in one transaction, p50", "ms", goal{}, percentile(one, 50))
		b.rec.add(4, "diagnostic: all fires in one transaction, p99", "ms", goal{}, percentile(one, 99))
		b.rec.add(4, "fire lag min (the first fire)", "ms", goal{}, percentile(lags, 0))
		b.rec.add(4, "fire lag p50", "ms", atMost(5), percentile(lags, 50))
		b.rec.add(4, "fire lag p99", "ms", atMost(20), percentile(lags, 99))
		b.rec.add(4, "fire lag max", "ms", goal{}, percentile(lags, 100))
		b.rec.add(4, "recorded lag p99 (handed to the store)", "ms", goal{}, percentile(recorded, 99))
		b.rec.add(4, "diagnostic: store calls that committed fires", "", goal{}, float64(calls))
		if n > 1 {
			b.rec.add(4, "diagnostic: lag added per fire, (max − min) / (n − 1)", "ms", goal{}, (percentile(lags, 100)-percentile(lags, 0))/float64(n-1))
		}
		b.logf("fig 4: rep %d: p50 %.1f ms, p99 %.1f ms, max %.1f ms", rep+1, percentile(lags, 50), percentile(lags, 99), percentile(lags, 100))
	}
	return nil
}

// fireLagOnce fires n automations at one slot with the scheduler's first
// slice of slice fires (0: its default).
func fireLagOnce(ctx context.Context, b *bench, rep, n, slice int, lead time.Duration) (lags, recorded []float64, calls int, err error) {
	w, err := newWorkspace(ctx, b.disk.Dir, fmt.Sprintf("fires-%d-%d", rep, slice))
	if err != nil {
		return nil, nil, 0, err
	}
	defer w.cleanup()
	st, err := w.openStore(ctx, "FULL")
	if err != nil {
		return nil, nil, 0, err
	}
	defer st.Close()
	targets := &automations.WorkflowTargets{Dir: w.WS.WorkflowsDir()}
	svc := &automations.Service{Store: st, LocksDir: w.WS.LocksDir(), Targets: targets}
	err = parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		_, err := svc.Create(ctx, automations.CreateParams{Owner: "mcp:cairn-bench", Spec: automations.Spec{
			Key: fmt.Sprintf("every-minute-%04d", i), Target: "noop", Cron: "* * * * *", TZ: "UTC",
		}})
		return err
	})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("create automations: %w", err)
	}

	// The first minute boundary after every automation's creation, put
	// lead away on the shifted clock.
	now := time.Now()
	boundary := now.Truncate(time.Minute).Add(time.Minute)
	clk := shiftedClock{offset: boundary.Add(-lead).Sub(now)}
	ft := &fireTimer{Store: st, clk: clk, done: make(chan struct{}), want: n}

	eng, err := runs.New(runs.Options{Store: st, Workspace: w.WS})
	if err != nil {
		return nil, nil, 0, err
	}
	if err := eng.Start(ctx); err != nil {
		return nil, nil, 0, err
	}
	defer eng.Stop()
	sched := automations.New(automations.Config{
		Store:     ft,
		LocksDir:  w.WS.LocksDir(),
		Targets:   targets,
		Workspace: w.Dir,
		Clock:     clk,
		Runs:      st,
		FireSlice: slice,
	})
	if err := sched.Start(ctx); err != nil {
		return nil, nil, 0, err
	}
	defer sched.Stop()
	select {
	case <-ft.done:
	case <-time.After(lead + time.Minute):
		ft.mu.Lock()
		got := len(ft.lags)
		ft.mu.Unlock()
		return nil, nil, 0, fmt.Errorf("%d of %d automations fired within a minute of their slot", got, n)
	case <-ctx.Done():
		return nil, nil, 0, ctx.Err()
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return ft.lags, ft.rec, ft.calls, nil
}
