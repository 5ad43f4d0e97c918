package automations

import (
	"testing"
	"time"
)

func TestPausedAutomationsDoNotFire(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.create(Spec{Key: "k", Cron: "*/10 * * * *", TZ: "UTC", Missed: "once"})
	if _, err := e.svc.Pause(e.ctx, "k", "holiday"); err != nil {
		t.Fatal(err)
	}
	e.advanceTo(t0.Add(time.Hour + 30*time.Second))
	if n := len(e.fires(a.ID)); n != 0 {
		t.Fatalf("%d fires while paused", n)
	}
	// Resuming does not catch up what passed while paused, even under once.
	e.clock.Set(t0.Add(time.Hour + 5*time.Minute))
	if _, err := e.svc.Resume(e.ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if next := e.step(); !next.Equal(t0.Add(70*time.Minute)) || len(e.fires(a.ID)) != 0 {
		t.Fatalf("after resume: next %v, fires %v", next.Sub(t0), nominals(e.fires(a.ID)))
	}
}
