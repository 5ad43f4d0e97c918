package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn/internal/text"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/mcp/transport"
)

// Resource URIs.
const (
	runURIPrefix     = "cairn://runs/"
	runOutputSuffix  = "/output"
	maxSubscriptions = 1000 // per session
)

// runURI is the resource URI of a run's record.
func runURI(id string) string { return runURIPrefix + id }

// runOutputURI is the resource URI of a run's journal.
func runOutputURI(id string) string { return runURIPrefix + id + runOutputSuffix }

// parseRunURI returns the run id a resource URI names and whether it is
// the journal. The id is validated.
func parseRunURI(uri string) (id string, output bool, err error) {
	rest, ok := strings.CutPrefix(uri, runURIPrefix)
	if !ok {
		return "", false, fmt.Errorf("unknown resource %q: Cairn serves cairn://runs/{run_id} and cairn://runs/{run_id}/output", text.Shorten(uri, 80))
	}
	if id, ok = strings.CutSuffix(rest, runOutputSuffix); ok {
		output = true
	} else {
		id = rest
	}
	if err := ids.Validate("run id", id); err != nil {
		return "", false, err
	}
	return id, output, nil
}

// subscriptions tracks which session subscribed to which resource, and
// watches the subscribed runs: through Poke (the run engine's change hook,
// for changes in this process) and by polling the store (for changes made
// by other processes).
type subscriptions struct {
	srv *Server

	mu       sync.Mutex
	sessions map[string]*subscriber // by session id
	seen     map[string]fingerprint // by run id: last state announced

	kick    chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}
	started bool
}

type subscriber struct {
	session server.ClientSession
	uris    map[string]bool
}

// fingerprint is what changes when a run's resources change.
type fingerprint struct {
	record  string // run revision and status
	output  string // journal position
	settled bool
	// quiet counts checks that found a settled run unchanged; past
	// settledChecks the run is not polled any more (nothing can change).
	quiet int
}

// settledChecks is how many unchanged checks of a settled run are made
// before it is left alone (its journal's end record may land just after
// the status).
const settledChecks = 8

func newSubscriptions(s *Server) *subscriptions {
	return &subscriptions{
		srv:      s,
		sessions: map[string]*subscriber{},
		seen:     map[string]fingerprint{},
		kick:     make(chan struct{}, 1),
	}
}

func (w *subscriptions) start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return errors.New("start resource watcher: already started")
	}
	w.started = true
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = make(chan struct{})
	go w.loop(ctx)
	return nil
}

func (w *subscriptions) stop() {
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.cancel = nil
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Poke asks the watcher to look at subscribed runs now (a run changed in
// this process). It never blocks.
func (w *subscriptions) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *subscriptions) add(sess server.ClientSession, uri string) {
	id, _, err := parseRunURI(uri)
	if err != nil {
		return // checkSubscribe refused it already
	}
	w.mu.Lock()
	sub := w.sessions[sess.SessionID()]
	if sub == nil {
		sub = &subscriber{session: sess, uris: map[string]bool{}}
		w.sessions[sess.SessionID()] = sub
	}
	sub.uris[uri] = true
	_, known := w.seen[id]
	w.mu.Unlock()
	if !known {
		// Take the current state as the baseline, so that the first
		// notification is about a change after the subscription.
		if fp, err := w.srv.fingerprint(context.Background(), id); err == nil {
			w.mu.Lock()
			if _, ok := w.seen[id]; !ok {
				w.seen[id] = fp
			}
			w.mu.Unlock()
		}
	}
	w.poke()
}

func (w *subscriptions) count(sessionID string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if sub := w.sessions[sessionID]; sub != nil {
		return len(sub.uris)
	}
	return 0
}

func (w *subscriptions) remove(sessionID, uri string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if sub := w.sessions[sessionID]; sub != nil {
		delete(sub.uris, uri)
		if len(sub.uris) == 0 {
			delete(w.sessions, sessionID)
		}
	}
	w.pruneLocked()
}

func (w *subscriptions) removeSession(sessionID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.sessions, sessionID)
	w.pruneLocked()
}

// pruneLocked forgets runs nobody watches any more.
func (w *subscriptions) pruneLocked() {
	watched := w.watchedLocked()
	for id := range w.seen {
		if !watched[id] {
			delete(w.seen, id)
		}
	}
}

func (w *subscriptions) watchedLocked() map[string]bool {
	out := map[string]bool{}
	for _, sub := range w.sessions {
		for uri := range sub.uris {
			if id, _, err := parseRunURI(uri); err == nil {
				out[id] = true
			}
		}
	}
	return out
}

// loop checks on every poke, and on a ticker only while something is
// watched (a subscription, a run followed for elicitation, an approval to
// ask): an idle server makes no wake-up. Whatever starts a watch pokes.
func (w *subscriptions) loop(ctx context.Context) {
	defer close(w.done)
	t := time.NewTicker(w.srv.pollInterval)
	defer t.Stop()
	ticking := true
	for {
		if busy := w.busy(); busy != ticking {
			if ticking = busy; busy {
				t.Reset(w.srv.pollInterval)
			} else {
				t.Stop()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.kick:
		}
		w.check(ctx)
		w.srv.elicit.check(ctx)
	}
}

// busy reports whether anything is watched.
func (w *subscriptions) busy() bool {
	w.mu.Lock()
	n := len(w.sessions)
	w.mu.Unlock()
	return n > 0 || w.srv.elicit.busy()
}

// check re-reads every watched run and announces the resources that
// changed to the sessions subscribed to them.
func (w *subscriptions) check(ctx context.Context) {
	w.mu.Lock()
	watched := w.watchedLocked()
	w.mu.Unlock()
	for id := range watched {
		if ctx.Err() != nil {
			return
		}
		w.mu.Lock()
		prev, ok := w.seen[id]
		w.mu.Unlock()
		if ok && prev.settled && prev.quiet >= settledChecks {
			continue
		}
		fp, err := w.srv.fingerprint(ctx, id)
		if err != nil {
			continue // a run deleted or a store hiccup: try again next time
		}
		w.mu.Lock()
		old, known := w.seen[id]
		if known && fp.settled && old.record == fp.record && old.output == fp.output {
			fp.quiet = old.quiet + 1
		}
		w.seen[id] = fp
		var changed []string
		if known && old.record != fp.record {
			changed = append(changed, runURI(id))
		}
		if known && old.output != fp.output {
			changed = append(changed, runOutputURI(id))
		}
		type target struct {
			sess server.ClientSession
			uri  string
		}
		var targets []target
		for _, sub := range w.sessions {
			for _, uri := range changed {
				if sub.uris[uri] {
					targets = append(targets, target{sub.session, uri})
				}
			}
		}
		w.mu.Unlock()
		for _, t := range targets {
			w.srv.notifyUpdated(ctx, t.sess, t.uri)
		}
	}
}

// notifyUpdated sends notifications/resources/updated for uri to sess.
func (s *Server) notifyUpdated(ctx context.Context, sess server.ClientSession, uri string) {
	params := map[string]any{"uri": uri}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if transport.NotifySession(ctx, sess, transport.NewNotification(mcpgo.MethodNotificationResourceUpdated, params)) {
		return
	}
	if err := s.mcp.SendNotificationToSpecificClient(sess.SessionID(), mcpgo.MethodNotificationResourceUpdated, params); err != nil {
		s.log.Debug("mcp: resource update not delivered", "uri", uri, "session", sess.SessionID(), "err", err)
	}
}

// checkSubscribe refuses a resources/subscribe for a resource Cairn does
// not serve, a run that does not exist, or past the session's limit (the
// transport answers RESOURCE_NOT_FOUND with the text).
func (s *Server) checkSubscribe(ctx context.Context, sess server.ClientSession, uri string) error {
	id, _, err := parseRunURI(uri)
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	if sess != nil && s.subs.count(sess.SessionID()) >= maxSubscriptions {
		return fmt.Errorf("subscribe: this session already has %d subscriptions; unsubscribe from settled runs first", maxSubscriptions)
	}
	if _, err := s.fingerprint(ctx, id); err != nil {
		return fmt.Errorf("subscribe to %s: %w", uri, err)
	}
	return nil
}
