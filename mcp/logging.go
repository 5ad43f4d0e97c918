package mcp

import (
	"context"
	"fmt"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/cairnhq/cairn/store"
)

// runLogger is the logger name of run lifecycle messages.
const runLogger = "cairn.runs"

// maxLoggedRuns bounds the runs whose last status the run log keeps.
const maxLoggedRuns = 10000

// runLog tells clients, as notifications/message, when a run this
// process sees change (RunChanged) reaches a new status: at a level by
// status (failed is an error, cancelled a warning, waiting a notice, the
// rest info), so that logging/setLevel chooses what a client hears. A
// client that set no level hears errors only.
type runLog struct {
	s    *Server
	kick chan string

	mu     sync.Mutex
	last   map[string]store.RunStatus
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs the loop until stop.
func (l *runLog) start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	l.mu.Lock()
	l.cancel, l.done = cancel, make(chan struct{})
	done := l.done
	l.mu.Unlock()
	go func() {
		defer close(done)
		l.loop(ctx)
	}()
}

// stop ends the loop and waits for it; it is idempotent.
func (l *runLog) stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel = nil
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func newRunLog(s *Server) *runLog {
	return &runLog{s: s, kick: make(chan string, 256), last: map[string]store.RunStatus{}}
}

// changed queues a run to look at; it never blocks (a full queue drops
// the message, not the run).
func (l *runLog) changed(id string) {
	select {
	case l.kick <- id:
	default:
	}
}

func (l *runLog) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-l.kick:
			l.check(ctx, id)
		}
	}
}

func (l *runLog) check(ctx context.Context, id string) {
	if l.s.p.RunStore == nil {
		return
	}
	r, err := l.s.p.RunStore.GetRun(ctx, id)
	if err != nil {
		return
	}
	l.mu.Lock()
	prev, known := l.last[id]
	switch {
	case r.Status.Settled():
		delete(l.last, id)
	case known || len(l.last) < maxLoggedRuns:
		l.last[id] = r.Status
	}
	l.mu.Unlock()
	if known && prev == r.Status {
		return
	}
	level, text := runLogLine(r)
	n := mcpgo.NewLoggingMessageNotification(level, runLogger, map[string]any{
		"run_id": r.ID, "target": r.Target, "status": r.Status, "message": text,
	})
	for _, sid := range l.s.sessionIDs() {
		_ = l.s.mcp.SendLogMessageToSpecificClient(sid, n)
	}
}

// runLogLine is a run's status as a level and a line of text.
func runLogLine(r *store.Run) (mcpgo.LoggingLevel, string) {
	what := fmt.Sprintf("run %s (%s) is %s", r.ID, r.Target, r.Status)
	switch r.Status {
	case store.RunFailed:
		if r.Error != "" {
			what += ": " + r.Error
		}
		return mcpgo.LoggingLevelError, what
	case store.RunCancelled:
		return mcpgo.LoggingLevelWarning, what
	case store.RunWaiting:
		if r.Question != nil {
			what += fmt.Sprintf(" for an answer to %q (answer_run)", r.Question.Text)
		}
		return mcpgo.LoggingLevelNotice, what
	}
	return mcpgo.LoggingLevelInfo, what
}

// sessionIDs are the sessions that initialized.
func (s *Server) sessionIDs() []string {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	ids := make([]string, 0, len(s.clients))
	for id := range s.clients {
		ids = append(ids, id)
	}
	return ids
}
