package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn/automations/schedule"
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
	t.Run("overlap policies", func(t *testing.T) { t.Parallel(); testOverlapPolicies(t, newStore) })
	runCases(t, newStore, []storeCase{
		{"create get list", testCreateGetListAutomations},
		{"list pages with a keyset cursor", testListAutomationsPages},
		{"create with a taken owner and key", testCreateTakenKey},
		{"update and delete check the revision", testUpdateDeleteRevision},
		{"re-enabling moves the cursor and a new monitor trigger resets the observation", testReenableAndRetrigger},
		{"fire queues the run once per slot", testFireOncePerSlot},
		{"racing fires of one slot queue one run", testRacingFires},
		{"a settled run row ends the overlap", testSettledRunEndsOverlap},
		{"paused automations do not fire", testPausedDoNotFire},
		{"fire history keeps the newest", testFireHistory},
		{"record state", testRecordState},
		{"pause after failures in a row", testPauseAfterFailures},
	})
}

func testCreateGetListAutomations(t *testing.T, s store.Store) {
	ctx := context.Background()
	v0, err := s.AutomationsVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := newTestAutomation("aut_a", "nightly")
	a.Trigger = store.AutomationTrigger{Kind: store.TriggerFiles, Files: []string{"src/**/*.go", "go.mod"}, Every: "10s"}
	mustCreateAutomation(t, s, a)
	if a.Revision != 1 || a.Overlap != store.OverlapSkip || a.Missed != string(schedule.MissedSkip) {
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
}

func testCreateTakenKey(t *testing.T, s store.Store) {
	ctx := context.Background()
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
}

func testUpdateDeleteRevision(t *testing.T, s store.Store) {
	ctx := context.Background()
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
}

func testReenableAndRetrigger(t *testing.T, s store.Store) {
	ctx := context.Background()
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
}

func testRecordState(t *testing.T, s store.Store) {
	ctx := context.Background()
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

// testListAutomationsPages pages through automations of two owners with
// After and Limit: every page holds at most Limit, the pages together hold
// each automation once in order, and an automation created behind the
// cursor does not shift the next page.
func testListAutomationsPages(t *testing.T, s store.Store) {
	ctx := context.Background()
	var want []string
	for i, owner := range []string{"cli", "config", "mcp:editor"} {
		for j := range 7 {
			a := newTestAutomation(fmt.Sprintf("aut_%d%d", i, j), fmt.Sprintf("k%02d", j))
			a.Owner = owner
			mustCreateAutomation(t, s, a)
			want = append(want, a.ID)
		}
	}
	for _, f := range []store.AutomationFilter{{}, {Owner: "config"}, {Key: "k03"}} {
		all, err := s.ListAutomations(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{1, 3, 7, 100} {
			var got []string
			p := f
			p.Limit = limit
			for pages := 0; ; pages++ {
				if pages > len(all)+1 {
					t.Fatalf("%+v: paging does not end", f)
				}
				page, err := s.ListAutomations(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) > limit {
					t.Fatalf("%+v limit %d: page of %d", f, limit, len(page))
				}
				if len(page) == 0 {
					break
				}
				for _, a := range page {
					got = append(got, a.ID)
				}
				last := page[len(page)-1]
				p.After = &store.AutomationPosition{Owner: last.Owner, Key: last.Key}
			}
			if len(got) != len(all) {
				t.Fatalf("%+v limit %d: pages hold %d, listing %d", f, limit, len(got), len(all))
			}
			for i := range got {
				if got[i] != all[i].ID {
					t.Fatalf("%+v limit %d: page item %d = %s, want %s", f, limit, i, got[i], all[i].ID)
				}
			}
		}
	}
	first, err := s.ListAutomations(ctx, store.AutomationFilter{Limit: 5})
	if err != nil || len(first) != 5 {
		t.Fatalf("first page: %d, %v", len(first), err)
	}
	before := newTestAutomation("aut_early", "a00")
	mustCreateAutomation(t, s, before) // sorts before the cursor
	last := first[4]
	next, err := s.ListAutomations(ctx, store.AutomationFilter{After: &store.AutomationPosition{Owner: last.Owner, Key: last.Key}, Limit: 2})
	if err != nil || len(next) != 2 || next[0].ID != want[5] || next[1].ID != want[6] {
		t.Fatalf("page after %s/%s = %v, %v; want %s %s", last.Owner, last.Key, automationIDs(next), err, want[5], want[6])
	}
}

func automationIDs(list []*store.Automation) []string {
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.ID
	}
	return out
}
