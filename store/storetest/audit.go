package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

func testAudit(t *testing.T, newStore NewFunc) {
	runCases(t, newStore, []storeCase{
		{"append, list in pages, since", testAuditAppendList},
		{"delete before a time, bounded", testAuditDelete},
		{"approval round-trips on automations", testApprovalRoundTrip},
		{"a run's principal and a person's question round-trip", testPrincipalRoundTrip},
	})
}

func appendAudit(t *testing.T, s store.Store, at time.Time, tool string) *store.AuditEntry {
	t.Helper()
	e := &store.AuditEntry{At: at, Principal: "agent:a", Connection: "conn_1", Tool: tool, ArgsDigest: "sha256:00", Outcome: store.AuditOK, Subject: "run_1"}
	if err := s.AppendAudit(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return e
}

func testAuditAppendList(t *testing.T, s store.Store) {
	ctx := context.Background()
	var last int64
	for i := range 5 {
		e := appendAudit(t, s, autT0.Add(time.Duration(i)*time.Minute), fmt.Sprintf("tool%d", i))
		if e.Seq <= last {
			t.Fatalf("entry %d: seq %d not after %d", i, e.Seq, last)
		}
		last = e.Seq
	}
	page, err := s.ListAudit(ctx, store.AuditFilter{Limit: 2})
	if err != nil || len(page) != 2 || page[0].Tool != "tool0" || page[1].Tool != "tool1" {
		t.Fatalf("first page = %+v, %v", page, err)
	}
	if p := page[0]; p.Principal != "agent:a" || p.Connection != "conn_1" || p.ArgsDigest != "sha256:00" || p.Outcome != store.AuditOK || p.Subject != "run_1" || !p.At.Equal(autT0) {
		t.Fatalf("entry read back = %+v", p)
	}
	next, err := s.ListAudit(ctx, store.AuditFilter{After: page[1].Seq, Limit: 10})
	if err != nil || len(next) != 3 || next[0].Tool != "tool2" {
		t.Fatalf("second page = %+v, %v", next, err)
	}
	since, err := s.ListAudit(ctx, store.AuditFilter{Since: autT0.Add(3 * time.Minute)})
	if err != nil || len(since) != 2 || since[0].Tool != "tool3" {
		t.Fatalf("since 3m = %+v, %v", since, err)
	}
}

func testAuditDelete(t *testing.T, s store.Store) {
	ctx := context.Background()
	for i := range 5 {
		appendAudit(t, s, autT0.Add(time.Duration(i)*time.Minute), fmt.Sprintf("tool%d", i))
	}
	n, err := s.DeleteAuditBefore(ctx, autT0.Add(3*time.Minute), 2)
	if err != nil || n != 2 {
		t.Fatalf("delete (limit 2) = %d, %v", n, err)
	}
	n, err = s.DeleteAuditBefore(ctx, autT0.Add(3*time.Minute), 100)
	if err != nil || n != 1 {
		t.Fatalf("delete the rest = %d, %v; want 1", n, err)
	}
	left, err := s.ListAudit(ctx, store.AuditFilter{})
	if err != nil || len(left) != 2 || left[0].Tool != "tool3" {
		t.Fatalf("left = %+v, %v", left, err)
	}
}

func testApprovalRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := newTestAutomation("aut_pending", "p")
	a.Owner, a.Enabled, a.Approval = "agent:a", false, store.ApprovalPending
	mustCreateAutomation(t, s, a)
	if got := mustGetAutomation(t, s, a.ID); got.Approval != store.ApprovalPending || got.Enabled {
		t.Fatalf("created pending automation reads back as approval %q enabled %t", got.Approval, got.Enabled)
	}
	next := mustGetAutomation(t, s, a.ID)
	next.Approval, next.Enabled = "", true
	if err := s.UpdateAutomation(ctx, next, next.Revision); err != nil {
		t.Fatal(err)
	}
	if got := mustGetAutomation(t, s, a.ID); got.Approval != "" || !got.Enabled {
		t.Fatalf("approved automation reads back as approval %q enabled %t", got.Approval, got.Enabled)
	}
}

// testPrincipalRoundTrip: who launched a run (Trigger.Principal) and a
// question only a person answers (Question.For, an ambiguous Kind) read
// back as written, in the list as in the record: the policy and answer_run
// decide on them.
func testPrincipalRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	for i, q := range []*store.Question{
		{ID: "q_h", Text: "Ship it?", Choices: []string{"yes", "no"}, Kind: "ask", For: store.QuestionForHuman, Step: "ok", Position: 1, AskedAt: t0},
		{ID: "q_a", Text: "step x may or may not have run: retry, skip or fail?", Choices: []string{"retry", "skip", "fail"}, Kind: "ambiguous", Step: "x", Position: 1, AskedAt: t0},
	} {
		id := fmt.Sprintf("run_principal%d", i)
		mustCreate(t, s, &store.Run{ID: id, Trigger: store.Trigger{Kind: "mcp", Client: "Editor", Principal: "agent:Editor"}})
		mustClaim(t, s, id, "c")
		if _, err := s.StartStep(ctx, store.StepStart{Now: tNow, RunID: id, Claim: "c", Path: q.Step, Position: 1, Kind: q.Kind, PID: 4242}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ParkRun(ctx, store.ParkParams{Now: tNow, ID: id, Claim: "c", Question: q}); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Trigger.Principal != "agent:Editor" || got.Trigger.Client != "Editor" || got.Question == nil || got.Question.For != q.For || got.Question.Kind != q.Kind || !got.Question.HumanOnly() {
			t.Fatalf("run %s reads back trigger %+v question %+v; want agent:Editor's, a person's question", id, got.Trigger, got.Question)
		}
	}
	listed, _, err := s.ListRuns(ctx, store.RunFilter{Status: []store.RunStatus{store.RunWaiting}})
	if err != nil || len(listed) != 2 {
		t.Fatalf("waiting runs: %d, %v; want 2", len(listed), err)
	}
	for _, r := range listed {
		if r.Trigger.Principal != "agent:Editor" {
			t.Fatalf("listed run %s has principal %q", r.ID, r.Trigger.Principal)
		}
	}
}
