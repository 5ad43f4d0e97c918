package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cairnhq/cairn/store"
)

// Document is the JSON a webhook receives (and the outbox stores), one
// per event:
//
//	{"id": "run.failed:run_…", "event": "run.failed", "at": "2026-…Z",
//	 "workspace": "/home/me/proj", "workspace_id": "0123456789ab",
//	 "title": "Cairn: nightly failed", "text": "step ping: exit status 1",
//	 "run": {"id": "run_…", "target": "nightly", "status": "failed", "error": "…",
//	         "question": {"id": "…", "text": "…", "choices": […]}},
//	 "automation": {"id": "…", "key": "…", "note": "…"}}
//
// id is the event's id; the webhook request also carries it (with the
// channel) in its Idempotency-Key header, so a receiver can drop a
// repeat should one ever come.
type Document struct {
	ID          string        `json:"id"`
	Event       string        `json:"event"`
	At          time.Time     `json:"at"`
	Workspace   string        `json:"workspace"`
	WorkspaceID string        `json:"workspace_id"`
	Title       string        `json:"title"`
	Text        string        `json:"text"`
	Run         *RunInfo      `json:"run,omitempty"`
	Automation  *AutomationID `json:"automation,omitempty"`
}

// RunInfo is the run an event is about.
type RunInfo struct {
	ID       string          `json:"id"`
	Target   string          `json:"target"`
	Status   string          `json:"status"`
	Error    string          `json:"error,omitempty"`
	Question *store.Question `json:"question,omitempty"`
}

// AutomationID is the automation an event is about.
type AutomationID struct {
	ID   string `json:"id"`
	Key  string `json:"key"`
	Note string `json:"note,omitempty"`
}

// The delivery channels; a row's id is the event id, "/", the channel.
const (
	ChannelDesktop = "desktop"
	ChannelWebhook = "webhook"
)

// Workspace names the workspace in documents.
type Workspace struct{ Root, ID string }

// RunEvent builds the rows for a run that failed (q nil) or waits on
// question q; nil when the settings do not send that event.
func (s Settings) RunEvent(ws Workspace, r *store.Run, status store.RunStatus, errText string, q *store.Question, now time.Time) []*store.Notification {
	d := Document{At: now.UTC(), Workspace: ws.Root, WorkspaceID: ws.ID, Run: &RunInfo{ID: r.ID, Target: r.Target, Status: string(status), Error: errText}}
	switch {
	case q != nil:
		d.Event, d.ID = EventRunWaiting, fmt.Sprintf("%s:%s:%s", EventRunWaiting, r.ID, q.ID)
		d.Title, d.Text = fmt.Sprintf("Cairn: %s is waiting for an answer", r.Target), q.Text+fmt.Sprintf(" (mcp-host answer %s <answer>)", r.ID)
		d.Run.Question = q
	case status == store.RunFailed:
		d.Event, d.ID = EventRunFailed, EventRunFailed+":"+r.ID
		d.Title, d.Text = fmt.Sprintf("Cairn: %s failed", r.Target), errText
	default:
		return nil
	}
	return s.rows(d)
}

// AutomationPaused builds the rows for an automation paused by errors;
// pausedAt makes the id of this pause.
func (s Settings) AutomationPaused(ws Workspace, a *store.Automation, note string, pausedAt time.Time) []*store.Notification {
	d := Document{
		Event: EventAutomationPaused, ID: fmt.Sprintf("%s:%s:%d", EventAutomationPaused, a.ID, pausedAt.UnixMilli()),
		At: pausedAt.UTC(), Workspace: ws.Root, WorkspaceID: ws.ID,
		Title: fmt.Sprintf("Cairn: automation %s was paused", a.Key), Text: note,
		Automation: &AutomationID{ID: a.ID, Key: a.Key, Note: note},
	}
	return s.rows(d)
}

// rows is d as one outbox row per configured channel.
func (s Settings) rows(d Document) []*store.Notification {
	if !s.Wants(d.Event) {
		return nil
	}
	d.Text = clip(d.Text, 4<<10)
	if d.Run != nil {
		d.Run.Error = clip(d.Run.Error, 8<<10)
	}
	b, err := json.Marshal(d)
	if err != nil || len(b) > store.MaxNotificationPayload {
		b, _ = json.Marshal(Document{ID: d.ID, Event: d.Event, At: d.At, Workspace: d.Workspace, WorkspaceID: d.WorkspaceID, Title: d.Title})
	}
	var out []*store.Notification
	if s.Desktop {
		out = append(out, &store.Notification{ID: d.ID + "/" + ChannelDesktop, Kind: d.Event, Payload: b, CreatedAt: d.At})
	}
	if s.Webhook != nil {
		out = append(out, &store.Notification{ID: d.ID + "/" + ChannelWebhook, Kind: d.Event, Payload: b, CreatedAt: d.At})
	}
	return out
}

// clip bounds s to n bytes, keeping its end (where errors say the most).
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + strings.ToValidUTF8(s[len(s)-n:], "")
}
