package mcp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
)

// TestSessionsAdapter drives the session tools through the real
// sessions.Manager on the memory store.
func TestSessionsAdapter(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})

	var cs createSessionOut
	f.ok("create_session", map[string]any{"session_id": "chat-1", "title": "A chat"}, &cs)
	if !cs.Created || cs.Session.Title != "A chat" {
		t.Fatalf("create: %+v", cs)
	}
	var msgs []any
	for i := range 8 {
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("message %d", i)})
	}
	var ap appendOut
	f.ok("append_session_messages", map[string]any{"session_id": "chat-1", "messages": msgs}, &ap)
	if ap.Session.MessageCount != 8 || len(ap.Appended) != 8 || ap.Appended[7].Seq != 8 {
		t.Fatalf("append: %+v", ap)
	}
	var page sessionRead
	f.ok("get_session", map[string]any{"session_id": "chat-1", "limit": 5}, &page)
	if len(page.Messages) != 5 || page.NextCursor == "" {
		t.Fatalf("get_session page 1: %d messages, cursor %q", len(page.Messages), page.NextCursor)
	}
	var rest sessionRead
	f.ok("get_session", map[string]any{"session_id": "chat-1", "cursor": page.NextCursor}, &rest)
	if len(rest.Messages) != 3 || rest.Messages[0].Seq != 6 {
		t.Fatalf("get_session page 2: %+v", rest.Messages)
	}
	var list sessionPage
	f.ok("list_sessions", nil, &list)
	if len(list.Sessions) != 1 {
		t.Fatalf("list_sessions: %+v", list)
	}
	var comp compaction
	f.ok("compact_session", map[string]any{"session_id": "chat-1", "summary": "eight messages", "keep_last": 2}, &comp)
	if comp.Compacted != 6 || comp.ArchiveID == "" || comp.Session.Compactions != 1 || comp.MemoryFile == "" {
		t.Fatalf("compact: %+v", comp)
	}
	if msg := f.fails("compact_session", map[string]any{"session_id": "chat-1", "summary": "again", "keep_last": 5}); !strings.Contains(msg, "nothing to compact") {
		t.Errorf("second compaction: %q", msg)
	}
	if msg := f.fails("append_session_messages", map[string]any{"session_id": "nope", "messages": []any{map[string]any{"role": "user", "content": "x"}}}); !strings.Contains(msg, "nope") {
		t.Errorf("append to a missing session: %q", msg)
	}
	f.ok("delete_session", map[string]any{"session_id": "chat-1"}, nil)
	if msg := f.fails("get_session", map[string]any{"session_id": "chat-1"}); !strings.Contains(msg, "chat-1") {
		t.Errorf("get a deleted session: %q", msg)
	}
}

// TestAutomationsAdapter drives the automation tools against the real
// automations.Service on the memory store.
func TestAutomationsAdapter(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{clientName: "Cursor"})

	var created createAutomationOut
	f.ok("create_automation", map[string]any{"key": "nightly", "target": "noop", "cron": "0 3 * * 1-5", "tz": "Europe/Paris"}, &created)
	a := created.Automation
	if !created.Created || a.Owner != "agent:Cursor" || a.Trigger.Kind != "cron" || !strings.Contains(a.Schedule, "Europe/Paris") {
		t.Fatalf("create: %+v", a)
	}
	// Its next due time is there at once, 03:00 in Paris, with the offset.
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	if nd := a.History.NextDue; nd.IsZero() || nd.In(paris).Hour() != 3 || nd.In(paris).Minute() != 0 || !nd.After(time.Now()) {
		t.Fatalf("create: next due %v, want the next weekday 03:00 Europe/Paris", nd)
	}
	if _, off := a.History.NextDue.Zone(); off != 3600 && off != 7200 {
		t.Fatalf("create: next due %v not in the automation's zone", a.History.NextDue)
	}
	var again createAutomationOut
	f.ok("create_automation", map[string]any{"key": "nightly", "target": "noop", "cron": "0 3 * * 1-5", "tz": "Europe/Paris"}, &again)
	if again.Created || again.Automation.ID != a.ID {
		t.Errorf("create again: %+v", again)
	}
	if msg := f.fails("create_automation", map[string]any{"key": "nightly", "target": "noop", "every": "5m"}); !strings.Contains(msg, "different spec") {
		t.Errorf("create with another spec: %q", msg)
	}
	if msg := f.fails("create_automation", map[string]any{"key": "bad", "target": "noop", "cron": "0 0 30 2 *"}); !strings.Contains(msg, "cron") {
		t.Errorf("create with a cron that never fires: %q", msg)
	}
	if msg := f.fails("create_automation", map[string]any{"key": "watch", "target": "noop", "files": []string{"../outside/*"}}); !strings.Contains(msg, "..") {
		t.Errorf("create with a glob leaving the workspace: %q", msg)
	}
	if msg := f.fails("create_automation", map[string]any{"key": "watch", "target": "noop", "files": []string{"src/**/*.go"}, "every": "30s", "owner": "session-7"}); !strings.Contains(msg, "cannot choose the owner") {
		t.Errorf("create with an owner: %q; want it refused", msg)
	}
	if _, err := f.srv.p.Automations.Create(context.Background(), automations.CreateParams{Owner: "session-7", Spec: automations.Spec{Key: "watch", Target: "noop", Files: []string{"src/**/*.go"}, Every: "30s"}}); err != nil {
		t.Fatal(err)
	}

	var run runs.Run
	f.ok("launch_run", map[string]any{"target": "noop"}, &run)
	if run.Trigger.Kind != "mcp" || run.Trigger.Client != "Cursor" || run.Trigger.Principal != "agent:Cursor" {
		t.Errorf("launch_run trigger %+v, want kind mcp from client Cursor", run.Trigger)
	}

	var mine, all automationsOut
	f.ok("list_automations", nil, &mine)
	f.ok("list_automations", map[string]any{"all": true}, &all)
	if len(mine.Automations) != 1 || len(all.Automations) != 2 {
		t.Fatalf("list: mine %d, all %d", len(mine.Automations), len(all.Automations))
	}
	var paused automation
	f.ok("update_automation", map[string]any{"id": a.ID, "enabled": false, "note": "on holiday"}, &paused)
	if paused.Enabled || paused.Note != "on holiday" || paused.Revision != a.Revision+1 {
		t.Fatalf("pause: %+v", paused)
	}
	if msg := f.fails("trigger_automation", map[string]any{"id": a.ID}); !strings.Contains(strings.ToLower(msg), "pause") {
		t.Errorf("trigger a paused automation: %q", msg)
	}
	var changed automation
	f.ok("update_automation", map[string]any{"id": a.ID, "enabled": true, "every": "10m"}, &changed)
	if !changed.Enabled || changed.Trigger.Kind != "interval" || changed.Trigger.Every != "10m" {
		t.Fatalf("resume and change the trigger: %+v", changed.Trigger)
	}
	var fired fire
	f.ok("trigger_automation", map[string]any{"id": a.ID}, &fired)
	if fired.Outcome != "queued" || fired.RunID == "" || fired.Run == nil || fired.Run.ID != fired.RunID {
		t.Fatalf("trigger: %+v", fired)
	}
	if _, err := f.st.GetRun(context.Background(), fired.RunID); err != nil {
		t.Errorf("the fired run is not stored: %v", err)
	}
	// The record says queued until a scheduler looks; the tools give the
	// run's own status.
	ctx, now := context.Background(), time.Now()
	if _, err := f.st.ClaimRun(ctx, store.ClaimParams{ID: fired.RunID, Claim: "c1", PID: 1, Now: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.SettleRun(ctx, store.SettleParams{ID: fired.RunID, Claim: "c1", Status: store.RunSucceeded, Now: now}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := f.st.GetAutomation(ctx, a.ID); rec.State.LastStatus != string(store.RunQueued) || rec.State.LastRunID != fired.RunID {
		t.Fatalf("the record says %q of %s: the check below no longer covers the gap", rec.State.LastStatus, rec.State.LastRunID)
	}
	var listed automationsOut
	f.ok("list_automations", nil, &listed)
	if len(listed.Automations) != 1 || listed.Automations[0].History.LastStatus != string(store.RunSucceeded) {
		t.Errorf("list_automations after the fired run succeeded: %+v", listed.Automations[0].History)
	}
	f.ok("delete_automation", map[string]any{"id": a.ID}, nil)
	if msg := f.fails("delete_automation", map[string]any{"id": a.ID}); !strings.Contains(msg, a.ID) {
		t.Errorf("delete twice: %q", msg)
	}
}
