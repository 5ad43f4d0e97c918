package host

import (
	"context"
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
	// lazy starts the outbox loop at the first row enqueued (false for
	// a dry run's memory store: only a started host delivers its rows).
	lazy bool
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
		lazy:     !h.InMemory(),
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
			// A host that was not started (a foreground mcp-host run or
			// roll executes its run itself) starts its outbox loop now;
			// in a started one it runs already.
			if n.lazy {
				n.outbox.Start(context.Background()) //nolint:errcheck // returns nil
			}
			n.outbox.Kick()
		}
	}
}

// drainLimit bounds how long a host that was not started waits, as it
// closes, for its outbox loop to try the rows due.
const drainLimit = 30 * time.Second

// drain lets the outbox loop of a host that was not started try the
// rows due before it ends (nothing when n is nil or no loop started).
func (n *notifier) drain() {
	if n != nil {
		n.outbox.Drain(drainLimit)
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
