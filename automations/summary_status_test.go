package automations

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
)

// A fire records its run as queued; the scheduler records the outcome
// when it next looks. A listing in between (or after the firing process
// stopped) reads the run's own status instead of saying queued.
func TestSummaryReadsTheLastRunsStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memory.New()
	at := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	a := &store.Automation{ID: "aut_a", Key: "ping", Owner: "cli", Target: "hello", Input: json.RawMessage(`{}`),
		Trigger: store.AutomationTrigger{Kind: store.TriggerInterval, Every: "1m"}, Enabled: true, CreatedAt: at}
	if err := st.CreateAutomation(ctx, a); err != nil {
		t.Fatal(err)
	}
	run := &store.Run{ID: "run_1", Target: "hello", Literals: json.RawMessage(`{}`), Trigger: store.Trigger{Kind: "automation", AutomationID: a.ID, Nominal: at}}
	if _, err := st.Fire(ctx, store.FireParams{AutomationID: a.ID, Nominal: at, Actual: at, Run: run}); err != nil {
		t.Fatal(err)
	}
	status := func() string {
		t.Helper()
		sums, err := Summaries(ctx, st, at.Add(time.Minute))
		if err != nil || len(sums) != 1 {
			t.Fatalf("summaries: %v %v", sums, err)
		}
		return sums[0].LastStatus
	}
	if got := status(); got != string(store.RunQueued) {
		t.Fatalf("queued run: last status %q", got)
	}
	if _, err := st.ClaimRun(ctx, store.ClaimParams{ID: "run_1", Claim: "c1", PID: 1, Now: at.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != string(store.RunRunning) {
		t.Fatalf("running run: last status %q", got)
	}
	if _, err := st.SettleRun(ctx, store.SettleParams{ID: "run_1", Claim: "c1", Status: store.RunSucceeded, Now: at.Add(2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := st.GetAutomation(ctx, a.ID); rec.State.LastStatus != string(store.RunQueued) {
		t.Fatalf("the record was updated (%q): the test no longer covers the gap", rec.State.LastStatus)
	}
	if got := status(); got != string(store.RunSucceeded) {
		t.Fatalf("settled run: last status %q", got)
	}
}
