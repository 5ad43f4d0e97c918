package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

func TestAutomationsApproveAndReject(t *testing.T) {
	t.Parallel()
	hello := "name: hello\nsteps:\n  - id: greet\n    exec: [\"echo\", \"hi\"]\n"
	c := newCLIWS(t, map[string]string{"hello.yaml": hello})
	st := c.openStore()
	for _, key := range []string{"wanted", "unwanted"} {
		a := &store.Automation{ID: "aut_" + key, Key: key, Owner: "agent:a", Target: "hello",
			Trigger: store.AutomationTrigger{Kind: store.TriggerInterval, Every: "1h"}, Approval: store.ApprovalPending, Note: "waiting for approval"}
		if err := st.CreateAutomation(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	code, out, errs := c.run("automations", "list")
	if code != 0 || strings.Count(out, "pending approval") != 2 {
		t.Fatalf("list: exit %d, %q %s; want both pending approval", code, out, errs)
	}
	if code, _, errs := c.run("automations", "resume", "wanted"); code == 0 || !strings.Contains(errs, "approve") {
		t.Errorf("resume of a pending automation: exit %d, %s; want it refused, pointing at approve", code, errs)
	}
	if code, out, errs := c.run("automations", "approve", "wanted", "--json"); code != 0 || !strings.Contains(out, `"enabled": true`) || strings.Contains(out, `"approval"`) {
		t.Fatalf("approve: exit %d, %s %s", code, out, errs)
	}
	if code, _, errs := c.run("automations", "approve", "wanted"); code == 0 || !strings.Contains(errs, "not waiting") {
		t.Errorf("approve twice: exit %d, %s", code, errs)
	}
	if code, out, errs := c.run("automations", "reject", "unwanted"); code != 0 || !strings.Contains(out, "rejected unwanted") {
		t.Fatalf("reject: exit %d, %s %s", code, out, errs)
	}
	code, out, _ = c.run("automations", "list")
	if code != 0 || strings.Contains(out, "unwanted") || !strings.Contains(out, "wanted") || strings.Contains(out, "pending") {
		t.Fatalf("list after approve and reject: %q", out)
	}
}

func TestAuditCommandPages(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, nil)
	st := c.openStore()
	now := time.Now()
	for i, age := range []time.Duration{72 * time.Hour, 2 * time.Hour, time.Hour} {
		e := &store.AuditEntry{At: now.Add(-age), Principal: "agent:a", Connection: "conn_1", Tool: []string{"launch_run", "answer_run", "cancel_run"}[i], ArgsDigest: "sha256:abc", Outcome: store.AuditOK, Subject: "run_1"}
		if err := st.AppendAudit(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	code, out, errs := c.run("audit", "--json", "--since", "24h", "--limit", "1")
	var page auditPage
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Entries) != 1 || page.Entries[0].Tool != "answer_run" || page.NextCursor == "" {
		t.Fatalf("audit --since 24h --limit 1: exit %d, %s %s", code, out, errs)
	}
	code, out, _ = c.run("audit", "--json", "--since", "24h", "--cursor", page.NextCursor)
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Entries) != 1 || page.Entries[0].Tool != "cancel_run" {
		t.Fatalf("second page: %s", out)
	}
	if code, out, _ := c.run("audit"); code != 0 || strings.Count(out, "agent:a") != 3 || !strings.Contains(out, "launch_run") {
		t.Fatalf("audit: %q", out)
	}
	if code, _, errs := c.run("audit", "--since", "yesterday-ish"); code != ExitUsage || !strings.Contains(errs, "--since") {
		t.Fatalf("bad --since: exit %d, %s", code, errs)
	}
}
