package cli

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

// parisNine matches 09:00 in Paris with the zone and its offset, in winter
// or in summer.
var parisNine = regexp.MustCompile(`\d{4}-\d\d-\d\d 09:00:00 (CET UTC\+01:00|CEST UTC\+02:00)`)

// TestHonestSchedules: with no process alive, automations create prints
// the next due time in the automation's zone and warns that nothing will
// fire it, naming the ways to start one; show prints it at once; a
// workflow's on: trigger is listed without any worker having run; with the
// scheduler lock held there is no warning.
func TestHonestSchedules(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, map[string]string{
		"ok.yaml":   cliFiles(t)["ok.yaml"],
		"tick.yaml": "on:\n  - every: 1h\nsteps:\n  - id: a\n    exec: [\"true\"]\n",
	})
	code, out, errs := c.run("automations", "create", "--key", "morning", "--target", "ok", "--cron", "0 9 * * *", "--tz", "Europe/Paris")
	if code != 0 || !strings.Contains(out, "created morning") || !parisNine.MatchString(out) {
		t.Fatalf("create: exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "warning: no mcp-host process") || !strings.Contains(errs, "mcp-host worker") || !strings.Contains(errs, "mcp-host service install") {
		t.Fatalf("create with no process alive: stderr %q, want the warning", errs)
	}
	code, out, _ = c.run("automations", "show", "morning")
	if code != 0 || !regexp.MustCompile(`next due +`+parisNine.String()).MatchString(out) {
		t.Fatalf("show: exit %d\n%s", code, out)
	}
	code, out, _ = c.run("automations", "show", "morning", "--json")
	var shown struct {
		NextDue time.Time `json:"next_due"`
		Zone    string    `json:"zone"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &shown) != nil || shown.Zone != "Europe/Paris" || shown.NextDue.Before(time.Now()) || shown.NextDue.Sub(time.Now()) > 25*time.Hour {
		t.Fatalf("show --json: exit %d: %s", code, out)
	}

	// The workflow's on: trigger, though no worker or serve has run.
	code, out, _ = c.run("automations", "list")
	if code != 0 || !strings.Contains(out, "tick:0") || !strings.Contains(out, "every 1h") {
		t.Fatalf("automations list: exit %d\n%s", code, out)
	}
	code, out, _ = c.run("automations", "list", "--json")
	var sums []automations.Summary
	if code != 0 || json.Unmarshal([]byte(out), &sums) != nil || len(sums) != 2 {
		t.Fatalf("automations list --json: exit %d: %s", code, out)
	}
	for _, s := range sums {
		if s.NextDue.IsZero() || s.Zone == "" {
			t.Fatalf("automations list --json: %+v has no next due or zone", s)
		}
	}
	if code, out, _ = c.run("list"); code != 0 || !strings.Contains(out, "tick:0") || !strings.Contains(out, "next 2") {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	if code, out, _ = c.run("status"); code != 0 || !strings.Contains(out, "tick:0") {
		t.Fatalf("status: exit %d\n%s", code, out)
	}

	// A process alive: no warning.
	l, err := locks.TryLock(c.ws.LocksDir(), "scheduler")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	code, out, errs = c.run("automations", "update", "morning", "--cron", "30 9 * * *")
	if code != 0 || !strings.Contains(out, "09:30:00 CET") && !strings.Contains(out, "09:30:00 CEST") || strings.Contains(errs, "warning") {
		t.Fatalf("update with a scheduler alive: exit %d\n%s\n%s", code, out, errs)
	}
}

// In leases mode the scheduler holds the store's scheduler lease and no
// lock file (on a shared store, perhaps on another machine): the lease
// counts as a process alive to fire, so there is no warning while it is
// held.
func TestHonestSchedulesInLeasesMode(t *testing.T) {
	t.Parallel()
	c, _ := newLeaseWS(t, map[string]string{"ok.yaml": cliFiles(t)["ok.yaml"]})
	code, out, errs := c.run("automations", "create", "--key", "morning", "--target", "ok", "--cron", "0 9 * * *", "--tz", "Europe/Paris")
	if code != 0 || !parisNine.MatchString(out) || !strings.Contains(errs, "warning: no mcp-host process") {
		t.Fatalf("create with nothing alive: exit %d\n%s\n%s", code, out, errs)
	}
	st := c.openStore()
	defer st.Close()
	if _, err := st.TakeLease(context.Background(), store.LeaseParams{Name: "scheduler", Holder: "lease_test", PID: os.Getpid(), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	code, out, errs = c.run("automations", "update", "morning", "--cron", "30 9 * * *")
	if code != 0 || !strings.Contains(out, "09:30:00 CE") || strings.Contains(errs, "warning") {
		t.Fatalf("update with the scheduler lease held: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs = c.run("automations", "show", "morning"); code != 0 || strings.Contains(errs, "warning") {
		t.Fatalf("show with the scheduler lease held: exit %d\n%s", code, errs)
	}
}
