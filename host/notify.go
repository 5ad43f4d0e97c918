package host

import (
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/notify"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
)

// notifier joins the notify settings to the run engine: the engine asks
// it for the outbox rows of a park or settle, and the first change
// noticed after one kicks the outbox loop (the rows are committed by
// then).
type notifier struct {
	outbox   *notify.Outbox
	settings notify.Settings
	ws       notify.Workspace
	pending  atomic.Bool
}

// newNotifier returns nil when notify: configures no channel.
func (h *Host) newNotifier(settings notify.Settings, clk clock.Clock) *notifier {
	if !settings.Enabled() {
		return nil
	}
	return &notifier{
		outbox:   notify.NewOutbox(notify.OutboxOptions{Store: h.Store, Settings: settings, Clock: clk, Logger: h.log}),
		settings: settings,
		ws:       notify.Workspace{Root: h.Workspace.Root, ID: h.Workspace.ID},
	}
}

// forRun is runs.Options.Notify.
func (n *notifier) forRun(ev runs.NotifyEvent) []*store.Notification {
	rows := n.settings.RunEvent(n.ws, ev.Run, ev.Status, ev.Error, ev.Question, ev.Now)
	if len(rows) > 0 {
		n.pending.Store(true)
	}
	return rows
}

// onChange wraps runs.Options.OnChange to kick the outbox after a write
// that enqueued rows.
func (n *notifier) onChange(next func(string)) func(string) {
	return func(id string) {
		if next != nil {
			next(id)
		}
		if n.pending.Swap(false) {
			n.outbox.Kick()
		}
	}
}

// runOptions wires n into the engine's options (nothing when n is nil).
func (n *notifier) runOptions(o *runs.Options) {
	if n == nil {
		return
	}
	o.Notify, o.OnChange = n.forRun, n.onChange(o.OnChange)
}

// schedulerOptions wires n into the scheduler: a pause enqueues its
// automation.paused rows and, once stored, kicks the outbox (nothing
// when n is nil).
func (n *notifier) schedulerOptions(c *automations.Config) {
	if n == nil {
		return
	}
	c.PauseNotify = func(a *store.Automation, note string, at time.Time) []*store.Notification {
		return n.settings.AutomationPaused(n.ws, a, note, at)
	}
	c.OnPause = func(*store.Automation) { n.outbox.Kick() }
}
