package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// autT0 is a fixed instant the automation cases start from.
var autT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newTestAutomation(id, key string) *store.Automation {
	return &store.Automation{
		ID: id, Key: key, Owner: "cli", Target: "hello",
		Input:     json.RawMessage(`{"who":"x"}`),
		Trigger:   store.AutomationTrigger{Kind: store.TriggerInterval, Every: "1m"},
		Enabled:   true,
		CreatedAt: autT0,
	}
}

func newFireRun(id, automationID string, nominal time.Time) *store.Run {
	return &store.Run{ID: id, Target: "hello", Literals: json.RawMessage(`{}`), Trigger: store.Trigger{Kind: "automation", AutomationID: automationID, Nominal: nominal}}
}

func mustCreateAutomation(t *testing.T, s store.Store, a *store.Automation) *store.Automation {
	t.Helper()
	if err := s.CreateAutomation(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return a
}

func mustGetAutomation(t *testing.T, s store.Store, id string) *store.Automation {
	t.Helper()
	a, err := s.GetAutomation(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func testAutomations(t *testing.T, newStore NewFunc) {
	t.Run("fire many", func(t *testing.T) { t.Parallel(); testFireMany(t, newStore) })
	t.Run("create get list", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		v0, err := s.AutomationsVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a := newTestAutomation("aut_a", "nightly")
		a.Trigger = store.AutomationTrigger{Kind: store.TriggerFiles, Files: []string{"src/**/*.go", "go.mod"}, Every: "10s"}
		mustCreateAutomation(t, s, a)
		if a.Revision != 1 || a.Overlap != store.OverlapSkip || a.Missed != store.MissedSkip {
			t.Fatalf("defaults not filled: %+v", a)
		}
		got := mustGetAutomation(t, s, "aut_a")
		if got.Key != "nightly" || got.Owner != "cli" || got.Target != "hello" || string(got.Input) != `{"who":"x"}` ||
			!got.Trigger.Equal(a.Trigger) || !got.Enabled || got.Revision != 1 || !got.CreatedAt.Equal(autT0) {
			t.Fatalf("got %+v", got)
		}
		got.Trigger.Files[0] = "changed" // callers never share memory with the store
		if again := mustGetAutomation(t, s, "aut_a"); again.Trigger.Files[0] != "src/**/*.go" {
			t.Fatalf("store shares memory with a caller: %v", again.Trigger.Files)
		}
		mustCreateAutomation(t, s, newTestAutomation("aut_b", "other"))
		c := newTestAutomation("aut_c", "nightly")
		c.Owner = "mcp:editor"
		mustCreateAutomation(t, s, c)

		all, err := s.ListAutomations(ctx, store.AutomationFilter{})
		if err != nil || len(all) != 3 {
			t.Fatalf("ListAutomations(all) = %d, %v", len(all), err)
		}
		if all[0].ID != "aut_a" || all[1].ID != "aut_b" || all[2].ID != "aut_c" { // by owner, then key
			t.Fatalf("order: %s %s %s", all[0].ID, all[1].ID, all[2].ID)
		}
		mine, _ := s.ListAutomations(ctx, store.AutomationFilter{Owner: "mcp:editor"})
		if len(mine) != 1 || mine[0].ID != "aut_c" {
			t.Fatalf("ListAutomations(owner) = %v", mine)
		}
		byKey, _ := s.ListAutomations(ctx, store.AutomationFilter{Key: "nightly"})
		if len(byKey) != 2 {
			t.Fatalf("ListAutomations(key) = %d, want 2", len(byKey))
		}
		if _, err := s.GetAutomation(ctx, "aut_missing"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetAutomation(missing): %v", err)
		}
		if c, _ := s.Counts(ctx); c.Automations != 3 {
			t.Fatalf("Counts().Automations = %d", c.Automations)
		}
		if v, _ := s.AutomationsVersion(ctx); v <= v0 {
			t.Fatalf("version did not move on create: %d -> %d", v0, v)
		}
	})
	t.Run("create with a taken owner and key", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		mustCreateAutomation(t, s, newTestAutomation("aut_a", "nightly"))
		dup := newTestAutomation("aut_b", "nightly")
		err := s.CreateAutomation(ctx, dup)
		var ex *store.AutomationExistsError
		if !errors.As(err, &ex) || !errors.Is(err, store.ErrExists) || ex.Existing.ID != "aut_a" {
			t.Fatalf("duplicate (owner, key): %v, want *AutomationExistsError naming aut_a", err)
		}
		if err := s.CreateAutomation(ctx, newTestAutomation("aut_a", "fresh")); !errors.Is(err, store.ErrExists) {
			t.Fatalf("duplicate id: %v, want ErrExists", err)
		}
		if c, _ := s.Counts(ctx); c.Automations != 1 {
			t.Fatalf("Counts().Automations = %d, want 1", c.Automations)
		}
	})
	t.Run("update and delete check the revision", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		mustCreateAutomation(t, s, newTestAutomation("aut_a", "nightly"))
		v0, _ := s.AutomationsVersion(ctx)
		edit := mustGetAutomation(t, s, "aut_a")
		edit.Target = "bye"
		edit.Trigger = store.AutomationTrigger{Kind: store.TriggerCron, Cron: "0 3 * * *", TZ: "Europe/Paris"}
		edit.Enabled, edit.Note = false, "holiday"
		if err := s.UpdateAutomation(ctx, edit, 1); err != nil {
			t.Fatal(err)
		}
		if edit.Revision != 2 {
			t.Fatalf("revision after update = %d", edit.Revision)
		}
		got := mustGetAutomation(t, s, "aut_a")
		if got.Target != "bye" || got.Trigger.Cron != "0 3 * * *" || got.Enabled || got.Note != "holiday" || got.Revision != 2 || got.Key != "nightly" {
			t.Fatalf("after update: %+v", got)
		}
		if v, _ := s.AutomationsVersion(ctx); v <= v0 {
			t.Fatal("version did not move on update")
		}
		stale := mustGetAutomation(t, s, "aut_a")
		var se *store.StaleError
		if err := s.UpdateAutomation(ctx, stale, 1); !errors.As(err, &se) || se.Actual != 2 || !errors.Is(err, store.ErrStale) {
			t.Fatalf("stale update: %v", err)
		}
		if err := s.UpdateAutomation(ctx, &store.Automation{ID: "aut_missing"}, 1); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("update missing: %v", err)
		}
		if err := s.DeleteAutomation(ctx, "aut_a", 1); !errors.Is(err, store.ErrStale) {
			t.Fatalf("stale delete: %v", err)
		}
		if err := s.DeleteAutomation(ctx, "aut_a", 2); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetAutomation(ctx, "aut_a"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("after delete: %v", err)
		}
		if err := s.DeleteAutomation(ctx, "aut_a", 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("delete missing: %v", err)
		}
		// The key is free again.
		mustCreateAutomation(t, s, newTestAutomation("aut_b", "nightly"))
	})
	t.Run("re-enabling moves the cursor and a new monitor trigger resets the observation", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		a := newTestAutomation("aut_a", "watch")
		a.Trigger = store.AutomationTrigger{Kind: store.TriggerFiles, Files: []string{"*.go"}, Every: "10s"}
		a.Enabled = false
		mustCreateAutomation(t, s, a)
		if _, err := s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_a", Baseline: "d1"}); err != nil {
			t.Fatal(err)
		}
		edit := mustGetAutomation(t, s, "aut_a")
		edit.Enabled = true
		edit.UpdatedAt = autT0.Add(time.Hour + 500*time.Millisecond)
		if err := s.UpdateAutomation(ctx, edit, 1); err != nil {
			t.Fatal(err)
		}
		got := mustGetAutomation(t, s, "aut_a")
		if !got.State.Cursor.Equal(autT0.Add(time.Hour)) || got.State.Observation != "d1" {
			t.Fatalf("after resume: cursor %v observation %q", got.State.Cursor, got.State.Observation)
		}
		got.Trigger.Files = []string{"*.md"}
		if err := s.UpdateAutomation(ctx, got, 2); err != nil {
			t.Fatal(err)
		}
		if got := mustGetAutomation(t, s, "aut_a"); got.State.Observation != "" {
			t.Fatalf("observation kept over a new glob: %q", got.State.Observation)
		}
	})
	t.Run("fire queues the run once per slot", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		mustCreateAutomation(t, s, newTestAutomation("aut_a", "nightly"))
		v0, _ := s.AutomationsVersion(ctx)
		nominal := autT0.Add(time.Minute)
		res, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: nominal.Add(1500 * time.Millisecond), Run: newFireRun("run_1", "aut_a", nominal), Missed: 2, NextDue: nominal.Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		if res.AlreadyFired || res.Fire.Outcome != store.FireQueued || res.Fire.RunID != "run_1" || res.Fire.Lag != 1500*time.Millisecond || res.Run == nil {
			t.Fatalf("first fire: %+v %+v", res, res.Fire)
		}
		r, err := s.GetRun(ctx, "run_1")
		if err != nil || r.Status != store.RunQueued || r.Trigger.AutomationID != "aut_a" || !r.Trigger.Nominal.Equal(nominal) {
			t.Fatalf("queued run: %+v, %v", r, err)
		}
		a := mustGetAutomation(t, s, "aut_a")
		st := a.State
		if !st.Cursor.Equal(nominal) || st.LastRunID != "run_1" || st.Fires != 1 || st.Missed != 2 || !st.NextDue.Equal(nominal.Add(time.Minute)) ||
			!st.LastStart.Equal(nominal.Add(1500*time.Millisecond)) || st.LastStatus != "queued" || !st.InFlight() {
			t.Fatalf("state after fire: %+v", st)
		}
		if a.Revision != 1 {
			t.Fatalf("a fire bumped the revision to %d", a.Revision)
		}
		if v, _ := s.AutomationsVersion(ctx); v != v0 {
			t.Fatal("a fire moved the automations version")
		}
		// The same slot again, with another run: nothing happens.
		res, err = s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: nominal.Add(2 * time.Second), Run: newFireRun("run_2", "aut_a", nominal)})
		if err != nil || !res.AlreadyFired || res.Fire == nil || res.Fire.RunID != "run_1" {
			t.Fatalf("second fire of one slot: %+v, %v", res, err)
		}
		if _, err := s.GetRun(ctx, "run_2"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a repeated fire queued its run: %v", err)
		}
		// A scheduled slot not after the cursor is refused too.
		res, err = s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal.Add(-time.Second), Actual: nominal, Run: newFireRun("run_3", "aut_a", nominal)})
		if err != nil || !res.AlreadyFired {
			t.Fatalf("fire before the cursor: %+v, %v", res, err)
		}
		if c, _ := s.Counts(ctx); c.Runs != 1 {
			t.Fatalf("%d runs, want 1", c.Runs)
		}
		fires, err := s.ListFires(ctx, "aut_a", 0)
		if err != nil || len(fires) != 1 || !fires[0].Nominal.Equal(nominal) || fires[0].Outcome != store.FireQueued {
			t.Fatalf("ListFires = %+v, %v", fires, err)
		}
		if _, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_missing", Nominal: nominal, Run: newFireRun("run_4", "x", nominal)}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("fire of a missing automation: %v", err)
		}
	})
	t.Run("racing fires of one slot queue one run", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		a := newTestAutomation("aut_a", "nightly")
		a.Overlap = store.OverlapAllow
		mustCreateAutomation(t, s, a)
		const racers, slots = 8, 5
		var wg sync.WaitGroup
		queued := make(chan string, racers*slots)
		errs := make(chan error, racers*slots)
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 1; k <= slots; k++ {
					nominal := autT0.Add(time.Duration(k) * time.Minute)
					res, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: nominal, Run: newFireRun(fmt.Sprintf("run_%d_%d", i, k), "aut_a", nominal)})
					if err != nil {
						errs <- err
						return
					}
					if !res.AlreadyFired {
						queued <- res.Run.ID
					}
				}
			}()
		}
		wg.Wait()
		close(queued)
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if n := len(queued); n > slots {
			t.Fatalf("%d runs queued for %d slots", n, slots)
		}
		if c, _ := s.Counts(ctx); c.Runs != len(queued) {
			t.Fatalf("%d runs stored, %d reported queued", c.Runs, len(queued))
		}
		if st := mustGetAutomation(t, s, "aut_a").State; st.Fires != int64(autCounts(s).Runs) {
			t.Fatalf("fires counter %d, runs %d", st.Fires, autCounts(s).Runs)
		}
	})
	t.Run("overlap policies", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		for _, tc := range []struct {
			overlap              string
			secondOutcome        string
			thirdOutcome         string
			runs                 int
			skipped              int64
			bufferedAfterSecond  bool
			releaseQueuesAnother bool
		}{
			{overlap: store.OverlapSkip, secondOutcome: store.FireSkipped, thirdOutcome: store.FireSkipped, runs: 1, skipped: 2},
			{overlap: store.OverlapAllow, secondOutcome: store.FireQueued, thirdOutcome: store.FireQueued, runs: 3},
			{overlap: store.OverlapBufferOne, secondOutcome: store.FireBuffered, thirdOutcome: store.FireSkipped, runs: 1, skipped: 1, bufferedAfterSecond: true, releaseQueuesAnother: true},
		} {
			t.Run(tc.overlap, func(t *testing.T) {
				t.Parallel()
				s := open(t, newStore)
				a := newTestAutomation("aut_a", "k")
				a.Overlap = tc.overlap
				mustCreateAutomation(t, s, a)
				fire := func(k int, manual bool) store.FireResult {
					t.Helper()
					nominal := autT0.Add(time.Duration(k) * time.Minute)
					res, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: nominal, Manual: manual, Run: newFireRun(fmt.Sprintf("run_%d", k), "aut_a", nominal)})
					if err != nil {
						t.Fatal(err)
					}
					return res
				}
				if res := fire(1, false); res.Fire.Outcome != store.FireQueued {
					t.Fatalf("first fire: %s", res.Fire.Outcome)
				}
				if res := fire(2, false); res.Fire.Outcome != tc.secondOutcome {
					t.Fatalf("second fire while the first runs: %s, want %s", res.Fire.Outcome, tc.secondOutcome)
				}
				st := mustGetAutomation(t, s, "aut_a").State
				if !st.Buffered.IsZero() != tc.bufferedAfterSecond {
					t.Fatalf("buffered = %v", st.Buffered)
				}
				if res := fire(3, true); res.Fire.Outcome != tc.thirdOutcome || !res.Fire.Manual {
					t.Fatalf("third (manual) fire: %+v, want %s", res.Fire, tc.thirdOutcome)
				}
				st = mustGetAutomation(t, s, "aut_a").State
				if autCounts(s).Runs != tc.runs || st.Skipped != tc.skipped {
					t.Fatalf("runs %d skipped %d, want %d and %d", autCounts(s).Runs, st.Skipped, tc.runs, tc.skipped)
				}
				if !st.Cursor.Equal(autT0.Add(2 * time.Minute)) {
					t.Fatalf("a manual fire moved the cursor to %v", st.Cursor)
				}
				if !tc.releaseQueuesAnother {
					return
				}
				// The buffered fire waits while run_1 is in flight...
				nominal := autT0.Add(2 * time.Minute)
				res, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: autT0.Add(4 * time.Minute), Release: true, Run: newFireRun("run_rel", "aut_a", nominal)})
				if err != nil || !res.AlreadyFired {
					t.Fatalf("release while in flight: %+v, %v", res, err)
				}
				// ...and goes once it settled.
				settleFire(t, s, "aut_a", "run_1")
				res, err = s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: autT0.Add(4 * time.Minute), Release: true, Run: newFireRun("run_rel", "aut_a", nominal)})
				if err != nil || res.AlreadyFired || res.Fire.Outcome != store.FireQueued || res.Fire.RunID != "run_rel" {
					t.Fatalf("release: %+v, %v", res, err)
				}
				res, err = s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: autT0.Add(5 * time.Minute), Release: true, Run: newFireRun("run_rel2", "aut_a", nominal)})
				if err != nil || !res.AlreadyFired {
					t.Fatalf("second release: %+v, %v", res, err)
				}
				st = mustGetAutomation(t, s, "aut_a").State
				if !st.Buffered.IsZero() || st.LastRunID != "run_rel" || autCounts(s).Runs != 2 {
					t.Fatalf("after release: %+v, %d runs", st, autCounts(s).Runs)
				}
			})
		}
	})
	t.Run("a settled run row ends the overlap", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		mustCreateAutomation(t, s, newTestAutomation("aut_a", "k"))
		fire := func(k int) string {
			t.Helper()
			nominal := autT0.Add(time.Duration(k) * time.Minute)
			res, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: nominal, Run: newFireRun(fmt.Sprintf("run_%d", k), "aut_a", nominal)})
			if err != nil {
				t.Fatal(err)
			}
			return res.Fire.Outcome
		}
		if o := fire(1); o != store.FireQueued {
			t.Fatalf("first fire: %s", o)
		}
		if _, err := s.ClaimRun(ctx, store.ClaimParams{ID: "run_1", Claim: "c1", PID: 1, Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if o := fire(2); o != store.FireSkipped {
			t.Fatalf("fire while run_1 runs: %s", o)
		}
		if _, err := s.SettleRun(ctx, store.SettleParams{ID: "run_1", Claim: "c1", Status: store.RunFailed, Error: "boom"}); err != nil {
			t.Fatal(err)
		}
		// The scheduler has not recorded the finish; the run row decides.
		if o := fire(3); o != store.FireQueued {
			t.Fatalf("fire after run_1 settled: %s", o)
		}
	})
	t.Run("paused automations do not fire", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		a := newTestAutomation("aut_a", "k")
		a.Enabled, a.Note = false, "maintenance"
		mustCreateAutomation(t, s, a)
		_, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: autT0.Add(time.Minute), Manual: true, Run: newFireRun("run_1", "aut_a", autT0)})
		if !errors.Is(err, store.ErrPaused) {
			t.Fatalf("fire of a paused automation: %v", err)
		}
		if autCounts(s).Runs != 0 {
			t.Fatal("a paused automation queued a run")
		}
	})
	t.Run("fire history keeps the newest", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		a := newTestAutomation("aut_a", "k")
		a.Overlap = store.OverlapAllow
		mustCreateAutomation(t, s, a)
		const n = store.FireHistory + 5
		for k := 1; k <= n; k++ {
			nominal := autT0.Add(time.Duration(k) * time.Minute)
			if _, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: nominal, Run: newFireRun(fmt.Sprintf("run_%d", k), "aut_a", nominal)}); err != nil {
				t.Fatal(err)
			}
		}
		fires, err := s.ListFires(ctx, "aut_a", 100)
		if err != nil || len(fires) != store.FireHistory {
			t.Fatalf("ListFires = %d, %v; want %d", len(fires), err, store.FireHistory)
		}
		if !fires[0].Nominal.Equal(autT0.Add(n*time.Minute)) || !fires[len(fires)-1].Nominal.Equal(autT0.Add((n-store.FireHistory+1)*time.Minute)) {
			t.Fatalf("kept %v .. %v", fires[0].Nominal, fires[len(fires)-1].Nominal)
		}
		if three, _ := s.ListFires(ctx, "aut_a", 3); len(three) != 3 {
			t.Fatalf("limit 3 gave %d", len(three))
		}
		if st := mustGetAutomation(t, s, "aut_a").State; st.Fires != n {
			t.Fatalf("fires counter %d, want %d", st.Fires, n)
		}
		if err := s.DeleteAutomation(ctx, "aut_a", 0); err != nil {
			t.Fatal(err)
		}
		if fires, _ := s.ListFires(ctx, "aut_a", 0); len(fires) != 0 {
			t.Fatalf("%d fires left after delete", len(fires))
		}
	})
	t.Run("record state", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		mustCreateAutomation(t, s, newTestAutomation("aut_a", "k"))
		nominal := autT0.Add(time.Minute)
		if _, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: nominal, Actual: nominal, Run: newFireRun("run_1", "aut_a", nominal)}); err != nil {
			t.Fatal(err)
		}
		// Missed slots move the cursor forward only.
		a, err := s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_a", Cursor: autT0.Add(5 * time.Minute), Missed: 4, NextDue: autT0.Add(6 * time.Minute)})
		if err != nil || !a.State.Cursor.Equal(autT0.Add(5*time.Minute)) || a.State.Missed != 4 || !a.State.NextDue.Equal(autT0.Add(6*time.Minute)) {
			t.Fatalf("record missed: %+v, %v", a, err)
		}
		a, _ = s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_a", Cursor: autT0.Add(2 * time.Minute), Missed: 9})
		if !a.State.Cursor.Equal(autT0.Add(5*time.Minute)) || a.State.Missed != 4 {
			t.Fatalf("cursor moved back: %+v", a.State)
		}
		// A finish of another run is ignored; of the last run, recorded.
		a, _ = s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_a", Finished: &store.RunFinish{RunID: "run_other", At: nominal.Add(time.Second), Status: store.RunFailed}})
		if !a.State.InFlight() {
			t.Fatal("the finish of another run was recorded")
		}
		a, _ = s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_a", Finished: &store.RunFinish{RunID: "run_1", At: nominal.Add(3 * time.Second), Status: store.RunSucceeded}})
		if a.State.InFlight() || a.State.LastStatus != "succeeded" || !a.State.LastFinish.Equal(nominal.Add(3*time.Second)) {
			t.Fatalf("finish: %+v", a.State)
		}
		// Monitor observations: baseline, compare-and-set, pending launches.
		empty, d1 := "", "d1"
		if _, err := s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_a", ExpectObservation: &empty, Baseline: "d1", ObservedAt: autT0}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_a", ExpectObservation: &empty, Baseline: "d9"}); !errors.Is(err, store.ErrStale) {
			t.Fatalf("stale observation: %v", err)
		}
		p := &store.PendingLaunch{Nominal: autT0.Add(10 * time.Minute), Observation: "d2", Since: autT0.Add(10 * time.Minute)}
		a, err = s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_a", ExpectObservation: &d1, Pending: p, Error: "target broken"})
		if err != nil || a.State.Pending == nil || a.State.Pending.Observation != "d2" || a.State.LastError != "target broken" {
			t.Fatalf("pending: %+v, %v", a, err)
		}
		got := mustGetAutomation(t, s, "aut_a")
		if got.State.Pending == nil || !got.State.Pending.Nominal.Equal(p.Nominal) || got.State.Observation != "d1" {
			t.Fatalf("stored pending: %+v", got.State)
		}
		// The fire hands the change over: observation set, pending cleared.
		res, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_a", Nominal: p.Nominal, Actual: p.Nominal.Add(time.Second), Observation: "d2", Run: newFireRun("run_2", "aut_a", p.Nominal)})
		if err != nil || res.Fire.Outcome != store.FireQueued {
			t.Fatalf("monitor fire: %+v, %v", res, err)
		}
		got = mustGetAutomation(t, s, "aut_a")
		if got.State.Pending != nil || got.State.Observation != "d2" || got.State.LastError != "" {
			t.Fatalf("after the monitor fire: %+v", got.State)
		}
		if a, _ := s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_a", Error: "x"}); a.State.LastError != "x" {
			t.Fatal("error not recorded")
		}
		if a, _ := s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_a", Error: "-"}); a.State.LastError != "" {
			t.Fatal("error not cleared")
		}
		if _, err := s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_missing"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("record missing: %v", err)
		}
	})
}

// testFireMany: FireMany decides every fire of a batch exactly as Fire
// would, each with its own outcome, in one operation.
func testFireMany(t *testing.T, newStore NewFunc) {
	slot := autT0.Add(time.Minute)
	scheduled := func(id string, nominal time.Time, run string) store.FireParams {
		return store.FireParams{AutomationID: id, Nominal: nominal, Actual: nominal.Add(3 * time.Millisecond), NextDue: nominal.Add(time.Minute), Run: newFireRun(run, id, nominal)}
	}
	t.Run("each fire gets its own outcome", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		for _, id := range []string{"aut_ok", "aut_ok2", "aut_paused", "aut_edited", "aut_moved", "aut_past", "aut_taken", "aut_manual"} {
			a := newTestAutomation(id, id)
			a.Trigger = store.AutomationTrigger{Kind: store.TriggerCron, Cron: "* * * * *", TZ: "UTC"}
			a.Enabled = id != "aut_paused"
			mustCreateAutomation(t, s, a)
		}
		// aut_edited changed after the fire was prepared; aut_moved's
		// cursor moved; aut_past's cursor is already at the slot;
		// aut_taken's run id is taken; aut_manual was fired by hand at
		// the very instant of the slot.
		edit := mustGetAutomation(t, s, "aut_edited")
		edit.Input = json.RawMessage(`{"who":"y"}`)
		if err := s.UpdateAutomation(ctx, edit, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_moved", Cursor: autT0.Add(30 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RecordAutomation(ctx, store.RecordParams{AutomationID: "aut_past", Cursor: slot}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateRun(ctx, newFireRun("run_taken", "x", slot)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Fire(ctx, store.FireParams{AutomationID: "aut_manual", Nominal: slot, Actual: slot, Manual: true, Run: newFireRun("run_by_hand", "aut_manual", slot)}); err != nil {
			t.Fatal(err)
		}
		expect := &store.FireExpect{Revision: 1}
		ps := []store.FireParams{
			scheduled("aut_ok", slot, "run_ok"),
			scheduled("aut_paused", slot, "run_paused"),
			scheduled("aut_missing", slot, "run_missing"),
			scheduled("aut_edited", slot, "run_edited"),
			scheduled("aut_moved", slot, "run_moved"),
			scheduled("aut_past", slot, "run_past"),
			scheduled("aut_taken", slot, "run_taken"),
			scheduled("aut_manual", slot, "run_manual"),
			scheduled("aut_ok2", slot, "run_ok2"),
		}
		for i := range ps {
			ps[i].Expect = expect
		}
		ps[0].Missed = 2
		outs, err := s.FireMany(ctx, ps)
		if err != nil {
			t.Fatal(err)
		}
		if len(outs) != len(ps) {
			t.Fatalf("%d outcomes for %d fires", len(outs), len(ps))
		}
		for i, want := range []struct {
			err     error
			already bool
		}{{}, {err: store.ErrPaused}, {err: store.ErrNotFound}, {err: store.ErrStale}, {err: store.ErrStale}, {already: true}, {err: store.ErrExists}, {already: true}, {}} {
			o := outs[i]
			switch {
			case want.err != nil:
				if !errors.Is(o.Err, want.err) {
					t.Errorf("%s: err %v, want %v", ps[i].AutomationID, o.Err, want.err)
				}
			case o.Err != nil:
				t.Errorf("%s: %v", ps[i].AutomationID, o.Err)
			case o.Result.AlreadyFired != want.already:
				t.Errorf("%s: %+v, want already fired %v", ps[i].AutomationID, o.Result, want.already)
			case !want.already && (o.Result.Fire.Outcome != store.FireQueued || o.Result.Run == nil || o.Result.Fire.Lag != 3*time.Millisecond):
				t.Errorf("%s: %+v %+v", ps[i].AutomationID, o.Result, o.Result.Fire)
			}
		}
		var se *store.StaleError
		if !errors.As(outs[3].Err, &se) || se.Expected != 1 || se.Actual != 2 {
			t.Errorf("edited automation: %v, want a *StaleError from revision 1 to 2", outs[3].Err)
		}
		if outs[7].Result.Fire == nil || outs[7].Result.Fire.RunID != "run_by_hand" {
			t.Errorf("the slot fired by hand reports %+v", outs[7].Result.Fire)
		}
		// Exactly the two fires that went through queued their runs.
		if c := autCounts(s); c.Runs != 4 { // run_taken, run_by_hand, run_ok, run_ok2
			t.Fatalf("%d runs, want 4", c.Runs)
		}
		for _, id := range []string{"run_ok", "run_ok2"} {
			if _, err := s.GetRun(ctx, id); err != nil {
				t.Fatalf("run %s: %v", id, err)
			}
		}
		st := mustGetAutomation(t, s, "aut_ok").State
		if !st.Cursor.Equal(slot) || st.Missed != 2 || st.Fires != 1 || st.LastRunID != "run_ok" || !st.NextDue.Equal(slot.Add(time.Minute)) || !st.InFlight() {
			t.Fatalf("state after the batch: %+v", st)
		}
		for _, id := range []string{"aut_paused", "aut_edited", "aut_moved", "aut_taken"} {
			if st := mustGetAutomation(t, s, id).State; st.Fires != 0 || st.LastRunID != "" {
				t.Errorf("%s: a refused fire changed the state: %+v", id, st)
			}
			if fs, _ := s.ListFires(ctx, id, 0); len(fs) != 0 {
				t.Errorf("%s: a refused fire was recorded: %+v", id, fs)
			}
		}
		if fs, _ := s.ListFires(ctx, "aut_manual", 0); len(fs) != 1 || fs[0].RunID != "run_by_hand" {
			t.Errorf("aut_manual fires: %+v", fs)
		}
		if outs, err := s.FireMany(ctx, nil); err != nil || len(outs) != 0 {
			t.Fatalf("empty batch: %v, %v", outs, err)
		}
	})
	t.Run("later fires of one automation see the earlier ones", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		mustCreateAutomation(t, s, newTestAutomation("aut_a", "k")) // overlap skip
		outs, err := s.FireMany(ctx, []store.FireParams{
			scheduled("aut_a", slot, "run_1"),
			scheduled("aut_a", slot, "run_2"),
			scheduled("aut_a", slot.Add(time.Minute), "run_3"),
		})
		if err != nil {
			t.Fatal(err)
		}
		if outs[0].Err != nil || outs[0].Result.Fire.Outcome != store.FireQueued {
			t.Fatalf("first: %+v", outs[0])
		}
		if outs[1].Err != nil || !outs[1].Result.AlreadyFired || outs[1].Result.Fire.RunID != "run_1" {
			t.Fatalf("the same slot again: %+v", outs[1])
		}
		if outs[2].Err != nil || outs[2].Result.Fire.Outcome != store.FireSkipped {
			t.Fatalf("the next slot while run_1 is in flight: %+v", outs[2].Result.Fire)
		}
		st := mustGetAutomation(t, s, "aut_a").State
		if st.Fires != 1 || st.Skipped != 1 || !st.Cursor.Equal(slot.Add(time.Minute)) || autCounts(s).Runs != 1 {
			t.Fatalf("state %+v, %d runs", st, autCounts(s).Runs)
		}
	})
	t.Run("a release in a batch", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		a := newTestAutomation("aut_a", "k")
		a.Overlap = store.OverlapBufferOne
		mustCreateAutomation(t, s, a)
		mustCreateAutomation(t, s, newTestAutomation("aut_b", "b"))
		outs, err := s.FireMany(ctx, []store.FireParams{scheduled("aut_a", slot, "run_1"), scheduled("aut_a", slot.Add(time.Minute), "run_2")})
		if err != nil || outs[1].Result.Fire.Outcome != store.FireBuffered {
			t.Fatalf("buffered: %+v, %v", outs, err)
		}
		// While a fire is buffered, a fire prepared ahead is refused: the
		// release comes first.
		next := scheduled("aut_a", slot.Add(2*time.Minute), "run_3")
		next.Expect = &store.FireExpect{Revision: 1, Cursor: slot.Add(time.Minute)}
		if outs, err := s.FireMany(ctx, []store.FireParams{next, scheduled("aut_b", slot, "run_b")}); err != nil || !errors.Is(outs[0].Err, store.ErrStale) || outs[1].Err != nil {
			t.Fatalf("prepared fire with a buffered one waiting: %+v, %v", outs, err)
		}
		settleFire(t, s, "aut_a", "run_1")
		rel := store.FireParams{AutomationID: "aut_a", Nominal: slot.Add(time.Minute), Actual: slot.Add(2 * time.Minute), Release: true, Run: newFireRun("run_rel", "aut_a", slot)}
		outs, err = s.FireMany(ctx, []store.FireParams{rel, scheduled("aut_b", slot.Add(time.Minute), "run_b2")})
		if err != nil || outs[0].Err != nil || outs[0].Result.AlreadyFired || outs[0].Result.Fire.RunID != "run_rel" || outs[1].Err != nil {
			t.Fatalf("release: %+v, %v", outs, err)
		}
		if st := mustGetAutomation(t, s, "aut_a").State; !st.Buffered.IsZero() || st.LastRunID != "run_rel" {
			t.Fatalf("after the release: %+v", st)
		}
	})
	t.Run("a settled latest run is recorded before the next", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		mustCreateAutomation(t, s, newTestAutomation("aut_a", "k"))
		mustCreateAutomation(t, s, newTestAutomation("aut_b", "b"))
		if _, err := s.FireMany(ctx, []store.FireParams{scheduled("aut_a", slot, "run_1"), scheduled("aut_b", slot, "run_b")}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ClaimRun(ctx, store.ClaimParams{ID: "run_1", Claim: "c1", PID: 1, Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SettleRun(ctx, store.SettleParams{ID: "run_1", Claim: "c1", Status: store.RunFailed, Error: "boom"}); err != nil {
			t.Fatal(err)
		}
		r, _ := s.GetRun(ctx, "run_1")
		// The next fire comes after the settle (real clock), as it would.
		next := time.Now().UTC().Truncate(time.Second).Add(time.Minute)
		p := scheduled("aut_a", next, "run_2")
		outs, err := s.FireMany(ctx, []store.FireParams{p, scheduled("aut_b", next, "run_b2")})
		if err != nil || outs[0].Err != nil || outs[0].Result.Fire.Outcome != store.FireQueued {
			t.Fatalf("fire after the settle: %+v, %v", outs, err)
		}
		st := mustGetAutomation(t, s, "aut_a").State
		if st.LastRunID != "run_2" || !st.InFlight() || st.Fires != 2 || !st.LastFinish.Equal(r.FinishedAt) {
			t.Fatalf("state: %+v; run_1 finished at %v", st, r.FinishedAt)
		}
		// The finish of run_1 is in the history until run_2 settles.
		if st.LastStatus != "queued" {
			t.Fatalf("last status %q, want queued (run_2)", st.LastStatus)
		}
	})
	t.Run("many automations at one instant", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		const n, slots = 75, store.FireHistory*2 + 3 // batches of unequal sizes; history pruned
		var ps []store.FireParams
		for i := range n {
			a := newTestAutomation(fmt.Sprintf("aut_%03d", i), fmt.Sprintf("k%03d", i))
			a.Overlap = store.OverlapAllow
			mustCreateAutomation(t, s, a)
		}
		for k := 1; k <= slots; k++ {
			nominal := autT0.Add(time.Duration(k) * time.Minute)
			ps = ps[:0]
			for i := range n {
				id := fmt.Sprintf("aut_%03d", i)
				ps = append(ps, scheduled(id, nominal, fmt.Sprintf("run_%03d_%02d", i, k)))
			}
			outs, err := s.FireMany(ctx, ps)
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range outs {
				if o.Err != nil || o.Result.AlreadyFired || o.Result.Fire.Outcome != store.FireQueued || o.Result.Run.ID != ps[i].Run.ID {
					t.Fatalf("slot %d, %s: %+v", k, ps[i].AutomationID, o)
				}
			}
		}
		// Again: every slot is taken.
		outs, err := s.FireMany(ctx, ps)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			if o.Err != nil || !o.Result.AlreadyFired {
				t.Fatalf("a fired slot again: %+v", o)
			}
		}
		if c := autCounts(s); c.Runs != n*slots {
			t.Fatalf("%d runs, want %d", c.Runs, n*slots)
		}
		for i := range n {
			id := fmt.Sprintf("aut_%03d", i)
			fs, err := s.ListFires(ctx, id, 0)
			if err != nil || len(fs) != store.FireHistory || !fs[0].Nominal.Equal(autT0.Add(slots*time.Minute)) {
				t.Fatalf("%s: %d fires, newest %v, %v", id, len(fs), fs[0].Nominal, err)
			}
			if st := mustGetAutomation(t, s, id).State; st.Fires != slots || !st.Cursor.Equal(autT0.Add(slots*time.Minute)) {
				t.Fatalf("%s: %+v", id, st)
			}
		}
	})
	t.Run("racing batches fire each slot once", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t, newStore)
		const n, racers = 10, 4
		for i := range n {
			a := newTestAutomation(fmt.Sprintf("aut_%d", i), fmt.Sprintf("k%d", i))
			a.Overlap = store.OverlapAllow
			mustCreateAutomation(t, s, a)
		}
		var wg sync.WaitGroup
		queued := make(chan string, n*racers*3)
		errs := make(chan error, racers)
		for r := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 1; k <= 3; k++ {
					nominal := autT0.Add(time.Duration(k) * time.Minute)
					var ps []store.FireParams
					for i := range n {
						ps = append(ps, scheduled(fmt.Sprintf("aut_%d", i), nominal, fmt.Sprintf("run_%d_%d_%d", r, i, k)))
					}
					if r%2 == 1 { // half of them fire one at a time
						for _, p := range ps {
							res, err := s.Fire(ctx, p)
							if err != nil {
								errs <- err
								return
							}
							if !res.AlreadyFired {
								queued <- res.Run.ID
							}
						}
						continue
					}
					outs, err := s.FireMany(ctx, ps)
					if err != nil {
						errs <- err
						return
					}
					for _, o := range outs {
						if o.Err != nil {
							errs <- o.Err
							return
						}
						if !o.Result.AlreadyFired {
							queued <- o.Result.Run.ID
						}
					}
				}
			}()
		}
		wg.Wait()
		close(queued)
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(queued) != n*3 {
			t.Fatalf("%d runs queued for %d slots", len(queued), n*3)
		}
		if c := autCounts(s); c.Runs != n*3 {
			t.Fatalf("%d runs stored, want %d", c.Runs, n*3)
		}
	})
}

// autCounts returns s's counts, for short assertions.
func autCounts(s store.Store) store.Counts {
	n, _ := s.Counts(context.Background())
	return n
}

// settleFire records that a run succeeded, as a scheduler does once it saw the
// run settle.
func settleFire(t *testing.T, s store.Store, automationID, runID string) {
	t.Helper()
	if _, err := s.RecordAutomation(context.Background(), store.RecordParams{AutomationID: automationID, Finished: &store.RunFinish{RunID: runID, At: autT0.Add(3 * time.Minute), Status: store.RunSucceeded}}); err != nil {
		t.Fatal(err)
	}
}
