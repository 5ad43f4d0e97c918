package automations

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
)

func refusal(err error) string {
	var re *access.RefusedError
	if errors.As(err, &re) {
		return re.Key
	}
	return ""
}

func TestApprovePolicyHoldsAnAgentsAutomationUntilApproved(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.svc.Policy = &access.Policy{Automations: access.Approve}
	agent := access.Agent("a")
	// Hourly at :00, created at 12:00: due at 13:00, 14:00, 15:00.
	res, err := e.svc.Create(e.ctx, CreateParams{By: agent, Spec: Spec{Key: "hourly", Target: "hello", Cron: "0 * * * *", TZ: "UTC"}})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Automation
	if a.Owner != string(agent) || a.Approval != store.ApprovalPending || a.Enabled {
		t.Fatalf("created: owner %q approval %q enabled %t; want the agent's, pending, disabled", a.Owner, a.Approval, a.Enabled)
	}
	for h := 1; h <= 3; h++ {
		e.advanceTo(t0.Add(time.Duration(h) * time.Hour))
	}
	if n := len(e.fires(a.ID)); n != 0 || e.runCount() != 0 {
		t.Fatalf("%d fires, %d runs across three due times while pending; want none", n, e.runCount())
	}
	if _, err := e.svc.Trigger(e.ctx, TriggerParams{Ref: a.ID, By: agent}); err == nil || !strings.Contains(err.Error(), "approve") {
		t.Fatalf("trigger of a pending automation: %v; want it refused", err)
	}
	on := true
	if _, err := e.svc.Update(e.ctx, UpdateParams{Ref: a.ID, By: agent, Enabled: &on}); refusal(err) != access.KeyAutomations {
		t.Fatalf("agent enabling its pending automation: %v; want refused by %s", err, access.KeyAutomations)
	}

	e.clock.Set(t0.Add(3*time.Hour + 10*time.Minute))
	if _, err := e.svc.Approve(e.ctx, "hourly"); err != nil {
		t.Fatal(err)
	}
	e.step()
	if n := len(e.fires(a.ID)); n != 0 {
		t.Fatalf("%d fires right after approval; the missed slots must not be caught up", n)
	}
	e.advanceTo(t0.Add(4 * time.Hour))
	fs := e.fires(a.ID)
	if len(fs) != 1 || !fs[0].Nominal.Equal(t0.Add(4*time.Hour)) || fs[0].Outcome != store.FireQueued {
		t.Fatalf("fires after approval: %v; want one at the next due time (4h)", nominals(fs))
	}

	// A change of schedule makes it pending again; reject removes it.
	every := "2h"
	b, err := e.svc.Update(e.ctx, UpdateParams{Ref: a.ID, By: agent, Every: &every})
	if err != nil || b.Approval != store.ApprovalPending || b.Enabled {
		t.Fatalf("rescheduled by the agent: %+v, %v; want pending", b, err)
	}
	if _, err := e.svc.Reject(e.ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.GetAutomation(e.ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("rejected automation: %v; want it gone", err)
	}
}

func TestAgentsTouchOnlyTheirOwnAutomations(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a, b := access.Agent("a"), access.Agent("b")
	mine, err := e.svc.Create(e.ctx, CreateParams{By: b, Spec: Spec{Key: "b1", Target: "hello", Every: "1h"}})
	if err != nil {
		t.Fatal(err)
	}
	human := e.create(Spec{Key: "h1", Every: "1h"})
	off := false
	for _, ref := range []string{mine.Automation.ID, human.ID} {
		if _, err := e.svc.Update(e.ctx, UpdateParams{Ref: ref, By: a, Enabled: &off}); refusal(err) != access.KeyEditOthers {
			t.Errorf("pause %s by another agent: %v", ref, err)
		}
		if _, err := e.svc.Delete(e.ctx, DeleteParams{Ref: ref, By: a}); refusal(err) != access.KeyEditOthers {
			t.Errorf("delete %s by another agent: %v", ref, err)
		}
		if _, err := e.svc.Trigger(e.ctx, TriggerParams{Ref: ref, By: a}); refusal(err) != access.KeyEditOthers {
			t.Errorf("trigger %s by another agent: %v", ref, err)
		}
	}
	if _, err := e.svc.Create(e.ctx, CreateParams{By: a, Owner: "human", Spec: Spec{Key: "x", Target: "hello", Every: "1h"}}); err == nil {
		t.Error("an agent created an automation owned by human")
	}
	// The owner itself, reconnected or not, edits its own.
	if _, err := e.svc.Update(e.ctx, UpdateParams{Ref: mine.Automation.ID, By: access.Agent("b"), Enabled: &off}); err != nil {
		t.Errorf("owner pausing its own: %v", err)
	}
	e.svc.Policy = &access.Policy{Launch: []string{"other"}, MinInterval: time.Hour, MaxAutomations: 1}
	// agents.launch changed after b made its automation: b's trigger is a
	// launch of a target agents may no longer launch; a person's is not.
	on := true
	if _, err := e.svc.Update(e.ctx, UpdateParams{Ref: mine.Automation.ID, By: access.Human, Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Trigger(e.ctx, TriggerParams{Ref: mine.Automation.ID, By: b}); refusal(err) != access.KeyLaunch {
		t.Errorf("trigger by its owner of a target outside agents.launch: %v", err)
	}
	if _, err := e.svc.Trigger(e.ctx, TriggerParams{Ref: mine.Automation.ID, By: access.Human}); err != nil {
		t.Errorf("a person's trigger of it: %v", err)
	}
	if _, err := e.svc.Create(e.ctx, CreateParams{By: a, Spec: Spec{Key: "a1", Target: "hello", Every: "2h"}}); refusal(err) != access.KeyLaunch {
		t.Errorf("create on a target outside agents.launch: %v", err)
	}
	if _, err := e.svc.Create(e.ctx, CreateParams{By: a, Spec: Spec{Key: "a1", Target: "other", Cron: "*/5 * * * *"}}); refusal(err) != access.KeyMinInterval {
		t.Errorf("create every 5 minutes under min_interval 1h: %v", err)
	}
	if _, err := e.svc.Create(e.ctx, CreateParams{By: b, Spec: Spec{Key: "b2", Target: "other", Every: "2h"}}); refusal(err) != access.KeyMaxAutomations {
		t.Errorf("second automation under max_automations 1: %v", err)
	}
}

// TestAgentsAutomationFiresOnlyTargetsThePolicyAllows: agents.launch
// narrowed after an agent made its automation: its fires fail naming the
// key (no run), and it is paused after PauseAfter of them; a person's
// automation of the same target fires as before.
func TestAgentsAutomationFiresOnlyTargetsThePolicyAllows(t *testing.T) {
	t.Parallel()
	e := setup(t)
	res, err := e.svc.Create(e.ctx, CreateParams{By: access.Agent("a"), Spec: Spec{Key: "a-hourly", Target: "hello", Cron: "0 * * * *", TZ: "UTC"}})
	if err != nil {
		t.Fatal(err)
	}
	agents := res.Automation
	human := e.create(Spec{Key: "h-hourly", Cron: "0 * * * *", TZ: "UTC"})
	e.sched = New(Config{Store: e.store, LocksDir: e.svc.LocksDir, Targets: e.targets, Workspace: e.dir, Clock: e.clock, Runs: e.runs,
		Policy: &access.Policy{Launch: []string{"other"}}, PauseAfter: 2})
	e.advanceTo(t0.Add(time.Hour))
	if st := e.get(agents.ID).State; !strings.Contains(st.LastError, access.KeyLaunch) || len(e.fires(agents.ID)) != 0 {
		t.Fatalf("agent's automation after a due time: last error %q, %d fires; want a failure naming %s and no fire", st.LastError, len(e.fires(agents.ID)), access.KeyLaunch)
	}
	if fs := e.fires(human.ID); len(fs) != 1 || fs[0].Outcome != store.FireQueued {
		t.Fatalf("the person's automation: fires %v; want one queued", nominals(fs))
	}
	if e.runCount() != 1 {
		t.Fatalf("%d runs; want the person's only", e.runCount())
	}
	e.advanceTo(t0.Add(2 * time.Hour))
	if a := e.get(agents.ID); a.Enabled || !strings.Contains(a.Note, access.KeyLaunch) {
		t.Fatalf("after two refused fires: enabled %t, note %q; want it paused, naming %s", a.Enabled, a.Note, access.KeyLaunch)
	}
}

// racingStore is a store in which another create of the same owner
// commits between a create's count and its insert, as two agents'
// creates at once on two processes do.
type racingStore struct {
	store.Store
	rival *store.Automation
}

func (r *racingStore) CreateAutomation(ctx context.Context, a *store.Automation) error {
	if rival := r.rival; rival != nil {
		r.rival = nil
		if err := r.Store.CreateAutomation(ctx, rival); err != nil {
			return err
		}
	}
	return r.Store.CreateAutomation(ctx, a)
}

// TestMaxAutomationsHoldsUnderRacingCreates: an agent at its limit but
// one, whose two creates both counted before either inserted, keeps one
// of them: the later is deleted and refused naming the key.
func TestMaxAutomationsHoldsUnderRacingCreates(t *testing.T) {
	t.Parallel()
	st := &racingStore{Store: memory.New()}
	t.Cleanup(func() { st.Close() })
	e := setupStore(t, st)
	e.svc.Policy = &access.Policy{MaxAutomations: 2}
	b := access.Agent("b")
	if _, err := e.svc.Create(e.ctx, CreateParams{By: b, Spec: Spec{Key: "b1", Target: "hello", Every: "1h"}}); err != nil {
		t.Fatal(err)
	}
	st.rival = &store.Automation{ID: "aut_rival", Key: "rival", Owner: string(b), Target: "hello", Input: []byte(`{}`),
		Trigger: store.AutomationTrigger{Kind: store.TriggerInterval, Every: "1h"}, Enabled: true, CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now()}
	e.clock.Advance(time.Second)
	_, err := e.svc.Create(e.ctx, CreateParams{By: b, Spec: Spec{Key: "b2", Target: "hello", Every: "1h"}})
	if refusal(err) != access.KeyMaxAutomations {
		t.Fatalf("the create that went past max_automations: %v", err)
	}
	list, err := e.store.ListAutomations(e.ctx, store.AutomationFilter{Owner: string(b)})
	if err != nil || len(list) != 2 || list[0].Key != "b1" || list[1].Key != "rival" {
		t.Fatalf("owner's automations after the race: %d %v", len(list), err)
	}
}
