package automations

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

func TestManualTriggerLeavesTheScheduleAlone(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.create(Spec{Key: "k", Cron: "0 * * * *", TZ: "UTC"})
	e.clock.Set(t0.Add(10 * time.Minute))
	rep, err := e.svc.Trigger(e.ctx, TriggerParams{Ref: "k"})
	if err != nil || rep.Outcome != store.FireQueued || rep.RunID == "" {
		t.Fatalf("trigger: %+v, %v", rep, err)
	}
	e.runs.finish(rep.RunID, t0.Add(11*time.Minute))
	e.advanceTo(t0.Add(time.Hour))
	fs := e.fires(a.ID)
	if len(fs) != 2 || !fs[0].Manual || fs[1].Manual || !fs[1].Nominal.Equal(t0.Add(time.Hour)) {
		t.Fatalf("fires %v", nominals(fs))
	}
}

func TestRollTakesTheScheduleLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := workflowService(t)
	if _, err := svc.Create(ctx, CreateParams{Owner: "cli", Spec: Spec{Key: "nightly", Target: "hello", Cron: "0 3 * * *", Input: json.RawMessage(`{"who":"ops"}`)}}); err != nil {
		t.Fatal(err)
	}
	rep, err := svc.Roll(ctx, TriggerParams{Ref: "nightly", Input: json.RawMessage(`{"who":"roll"}`)})
	if err != nil || rep.Outcome != store.FireQueued || rep.RunID == "" {
		t.Fatalf("roll: %+v, %v", rep, err)
	}
	r, err := svc.Store.GetRun(ctx, rep.RunID)
	if err != nil || string(r.Input) != `{"who":"roll"}` || r.Trigger.Kind != "automation" || !r.Trigger.Nominal.Equal(rep.Nominal) {
		t.Fatalf("queued run: %+v, %v", r, err)
	}
	var lit struct {
		Version      int
		File, Source string
		Input        map[string]any
	}
	if err := json.Unmarshal(r.Literals, &lit); err != nil || lit.Version != 1 || lit.Source != helloYAML || lit.Input["who"] != "roll" {
		t.Fatalf("literals: %s, %v", r.Literals, err)
	}
	// Overlap skip: the first run is still queued.
	if rep, err := svc.Roll(ctx, TriggerParams{Ref: "nightly"}); err != nil || rep.Outcome != store.FireSkipped {
		t.Fatalf("second roll: %+v, %v", rep, err)
	}
	l, err := locks.TryLock(svc.LocksDir, "schedule:nightly")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	var held *locks.HeldError
	if _, err := svc.Roll(ctx, TriggerParams{Ref: "nightly"}); !errors.As(err, &held) || held.Holder.PID != os.Getpid() {
		t.Fatalf("roll under a held lock: %v", err)
	}
	if _, err := svc.Roll(ctx, TriggerParams{Ref: "nope"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("roll of an unknown key: %v", err)
	}
}
