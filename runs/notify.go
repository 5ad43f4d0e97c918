package runs

import (
	"time"

	"github.com/cairnhq/cairn/store"
)

// NotifyEvent is a run about to park on a question (Question set) or to
// settle (Status, Error), for Options.Notify.
type NotifyEvent struct {
	Run      *store.Run // the run before the write
	Status   store.RunStatus
	Error    string
	Question *store.Question
	Now      time.Time
}

// notifications asks Options.Notify for the rows to write with ev.
func (e *Engine) notifications(ev NotifyEvent) []*store.Notification {
	if e.opts.Notify == nil || ev.Run == nil {
		return nil
	}
	return e.opts.Notify(ev)
}
