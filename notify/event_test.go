package notify

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// The paused event: one row per channel, the id naming the automation
// and the pause's time (so a repeat of one pause is the same row, and a
// later pause a new one), the note as text, and filtered by events.
func TestAutomationPausedDocument(t *testing.T) {
	t.Parallel()
	a := &store.Automation{ID: "aut_1", Key: "ping"}
	at := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	s := Settings{Desktop: true, Webhook: &WebhookSettings{URL: "https://x/"}}
	rows := s.AutomationPaused(Workspace{Root: "/w", ID: "ws1"}, a, "why", at)
	if len(rows) != 2 || rows[0].ID != "automation.paused:aut_1:1772452800000/desktop" || rows[1].ID != "automation.paused:aut_1:1772452800000/webhook" {
		t.Fatalf("rows %+v", rows)
	}
	var d Document
	if err := json.Unmarshal(rows[1].Payload, &d); err != nil {
		t.Fatal(err)
	}
	if d.Event != EventAutomationPaused || d.Text != "why" || d.Automation == nil || d.Automation.Key != "ping" || d.Automation.Note != "why" || d.Run != nil || !d.At.Equal(at) {
		t.Fatalf("document %+v", d)
	}
	if again := s.AutomationPaused(Workspace{}, a, "why", at.Add(time.Hour)); again[0].ID == rows[0].ID {
		t.Fatal("a later pause has the same id")
	}
	s.Events = []string{"failed"}
	if rows := s.AutomationPaused(Workspace{}, a, "why", at); rows != nil {
		t.Fatalf("paused sent with events [failed]: %+v", rows)
	}
}
