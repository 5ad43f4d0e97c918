package policy

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/cairnhq/cairn/automations/schedule"
	"github.com/cairnhq/cairn/store"
)

func TestApplyRecord(t *testing.T) {
	t.Parallel()
	baseline := "d1"
	other := "d0"
	cases := []struct {
		name  string
		p     store.RecordParams
		err   error
		check func(t *testing.T, st store.AutomationState)
	}{
		{name: "cursor moves forward with missed slots", p: store.RecordParams{Cursor: t0.Add(time.Hour), Missed: 3},
			check: func(t *testing.T, st store.AutomationState) {
				if !st.Cursor.Equal(t0.Add(time.Hour)) || st.Missed != 3 {
					t.Errorf("state = %+v", st)
				}
			}},
		{name: "cursor never moves back", p: store.RecordParams{Cursor: t0.Add(-time.Hour), Missed: 3},
			check: func(t *testing.T, st store.AutomationState) {
				if !st.Cursor.Equal(t0) || st.Missed != 0 {
					t.Errorf("state = %+v", st)
				}
			}},
		{name: "finish of the latest run", p: store.RecordParams{Finished: &store.RunFinish{RunID: "run_0", At: t0.Add(time.Second), Status: store.RunFailed}},
			check: func(t *testing.T, st store.AutomationState) {
				if !st.LastFinish.Equal(t0.Add(time.Second)) || st.LastStatus != "failed" || st.InFlight() {
					t.Errorf("state = %+v", st)
				}
			}},
		{name: "finish of an older run is ignored", p: store.RecordParams{Finished: &store.RunFinish{RunID: "run_old", At: t0.Add(time.Second), Status: store.RunFailed}},
			check: func(t *testing.T, st store.AutomationState) {
				if !st.InFlight() {
					t.Errorf("state = %+v", st)
				}
			}},
		{name: "baseline with the expected observation", p: store.RecordParams{ExpectObservation: new(string), Baseline: baseline, ObservedAt: t0},
			check: func(t *testing.T, st store.AutomationState) {
				if st.Observation != baseline || !st.ObservedAt.Equal(t0) {
					t.Errorf("state = %+v", st)
				}
			}},
		{name: "observation changed since", p: store.RecordParams{ExpectObservation: &other, Baseline: baseline}, err: store.ErrStale},
		{name: "error set", p: store.RecordParams{Error: "boom"},
			check: func(t *testing.T, st store.AutomationState) {
				if st.LastError != "boom" {
					t.Errorf("state = %+v", st)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := automation(store.OverlapSkip, true)
			st, err := ApplyRecord(a, c.p)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, st)
		})
	}
	a := automation(store.OverlapSkip, false)
	a.State.LastError = "boom"
	if st, _ := ApplyRecord(a, store.RecordParams{Error: "-"}); st.LastError != "" {
		t.Errorf(`Error "-" left %q`, st.LastError)
	}
}

func TestApplyUpdate(t *testing.T) {
	t.Parallel()
	files := store.AutomationTrigger{Kind: store.TriggerFiles, Files: []string{"*.go"}, Every: "10s"}
	cron := store.AutomationTrigger{Kind: store.TriggerCron, Cron: "0 3 * * *"}
	now := t0.Add(90*time.Minute + 1500*time.Millisecond)
	cases := []struct {
		name             string
		curEnabled       bool
		cur, next        store.AutomationTrigger
		keepsObservation bool
		cursor           time.Time
	}{
		{name: "same monitor trigger keeps the observation", curEnabled: true, cur: files, next: files, keepsObservation: true, cursor: t0},
		{name: "a new monitor trigger resets it", curEnabled: true, cur: files, next: cron, cursor: t0},
		{name: "re-enabling moves the cursor to the whole second", cur: cron, next: cron, keepsObservation: true, cursor: store.Millis(now).Truncate(time.Second)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cur := automation(store.OverlapSkip, false)
			cur.Enabled, cur.Trigger = c.curEnabled, c.cur
			cur.State.Observation = "d1"
			cur.State.Pending = &store.PendingLaunch{Observation: "d2"}
			next := &store.Automation{Target: "t2", Trigger: c.next, Enabled: true, Overlap: store.OverlapAllow}
			out := ApplyUpdate(cur, next, now)
			if out.Revision != cur.Revision+1 || !out.UpdatedAt.Equal(store.Millis(now)) || out.Target != "t2" || string(out.Input) != "{}" || out.Overlap != store.OverlapAllow {
				t.Errorf("updated = %+v", out)
			}
			if kept := out.State.Observation == "d1" && out.State.Pending != nil; kept != c.keepsObservation {
				t.Errorf("observation %q, pending %v; want kept %v", out.State.Observation, out.State.Pending, c.keepsObservation)
			}
			if out.State.Pending != nil && out.State.Pending == cur.State.Pending {
				t.Error("the pending launch is shared with the current record")
			}
			if !out.State.Cursor.Equal(c.cursor) {
				t.Errorf("cursor = %v, want %v", out.State.Cursor, c.cursor)
			}
		})
	}
}

func TestPrepareNew(t *testing.T) {
	t.Parallel()
	a := &store.Automation{CreatedAt: t0.Add(1500 * time.Microsecond)}
	PrepareNew(a)
	if !a.CreatedAt.Equal(store.Millis(a.CreatedAt)) || !a.UpdatedAt.Equal(a.CreatedAt) || a.Revision != 1 ||
		string(a.Input) != "{}" || a.Overlap != store.OverlapSkip || a.Missed != string(schedule.MissedSkip) {
		t.Errorf("prepared = %+v", a)
	}
	b := &store.Automation{Input: json.RawMessage(`{"x":1}`), Overlap: store.OverlapAllow, Missed: string(schedule.MissedOnce)}
	before := time.Now().Add(-time.Millisecond)
	PrepareNew(b)
	if b.CreatedAt.Before(before) || string(b.Input) != `{"x":1}` || b.Overlap != store.OverlapAllow || b.Missed != "once" {
		t.Errorf("prepared = %+v", b)
	}
}
