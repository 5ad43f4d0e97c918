package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/automations/policy"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// An automation the scheduler paused for its failures shows why, and how
// to resume it, in list and show; resume clears it.
func TestAutomationsShowThePauseReason(t *testing.T) {
	t.Parallel()
	run, ws := automationsWorkspace(t)
	if code, _, errs := run("automations", "create", "--key", "ping", "--target", "hello", "--every", "1h"); code != 0 {
		t.Fatalf("create: %s", errs)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, ws.DBPath(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := st.ListAutomations(ctx, store.AutomationFilter{Key: "ping"})
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %v %v", list, err)
	}
	note := policy.PauseNote("ping", 1, "fire: target is broken")
	if _, err := st.RecordAutomation(ctx, store.RecordParams{AutomationID: list[0].ID, Error: "fire: target is broken", FireFailed: true, Pause: &store.PauseParams{After: 1, Note: note}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, out, _ := run("automations", "list"); !strings.Contains(out, "paused by the scheduler after 1 failed fires in a row") {
		t.Fatalf("list: %s", out)
	}
	_, out, _ := run("automations", "show", "ping")
	for _, want := range []string{"state       paused by the scheduler after 1 failed fires", "mcp-host automations resume ping", "failures    1 in a row"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if code, _, errs := run("automations", "resume", "ping"); code != 0 {
		t.Fatalf("resume: %s", errs)
	}
	if _, out, _ := run("automations", "show", "ping"); !strings.Contains(out, "state       enabled") || strings.Contains(out, "failures") {
		t.Fatalf("show after resume:\n%s", out)
	}
}
