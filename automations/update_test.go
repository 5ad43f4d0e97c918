package automations

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

func TestUpdateTakesTheEditLockAndChecksTheRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := workflowService(t)
	res, err := svc.Create(ctx, CreateParams{Owner: "cli", Spec: Spec{Key: "k", Target: "hello", Every: "1h"}})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Automation
	cron, tz := "30 2 * * *", "America/New_York"
	got, err := svc.Update(ctx, UpdateParams{Ref: "k", Revision: 1, Cron: &cron, TZ: &tz})
	if err != nil || got.Revision != 2 || got.Trigger.Kind != store.TriggerCron || got.Trigger.Every != "" || got.Trigger.TZ != tz {
		t.Fatalf("update to cron: %+v, %v", got, err)
	}
	every := "45m"
	if got, err := svc.Update(ctx, UpdateParams{Ref: a.ID, Every: &every}); err != nil || got.Trigger.Kind != store.TriggerInterval || got.Trigger.TZ != "" {
		t.Fatalf("update to interval: %+v, %v", got, err)
	}
	if _, err := svc.Update(ctx, UpdateParams{Ref: "k", Revision: 1, Every: &every}); !errors.Is(err, store.ErrStale) {
		t.Fatalf("stale revision: %v", err)
	}
	bad := "0 0 30 2 *"
	if _, err := svc.Update(ctx, UpdateParams{Ref: "k", Cron: &bad}); !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("bad cron: %v", err)
	}
	// Another process editing it: refused, naming the holder.
	l, err := locks.TryLock(svc.LocksDir, "edit-"+a.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Update(ctx, UpdateParams{Ref: "k", Every: &every})
	var el *EditLockedError
	if !errors.As(err, &el) || !errors.Is(err, locks.ErrHeld) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("update under a held edit lock: %v", err)
	}
	if _, err := svc.Delete(ctx, DeleteParams{Ref: "k"}); !errors.As(err, &el) {
		t.Fatalf("delete under a held edit lock: %v", err)
	}
	l.Unlock()
	if got, err := svc.Pause(ctx, "k", "on holiday"); err != nil || got.Enabled || got.Note != "on holiday" {
		t.Fatalf("pause: %+v, %v", got, err)
	}
	if _, err := svc.Trigger(ctx, TriggerParams{Ref: "k"}); !errors.Is(err, store.ErrPaused) || !strings.Contains(err.Error(), "on holiday") {
		t.Fatalf("trigger while paused: %v", err)
	}
	if got, err := svc.Resume(ctx, "k"); err != nil || !got.Enabled || got.Note != "" {
		t.Fatalf("resume: %+v, %v", got, err)
	}
	if _, err := svc.Delete(ctx, DeleteParams{Ref: "k", Revision: 1}); !errors.Is(err, store.ErrStale) {
		t.Fatalf("stale delete: %v", err)
	}
	if _, err := svc.Delete(ctx, DeleteParams{Ref: "k"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Get(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
}
