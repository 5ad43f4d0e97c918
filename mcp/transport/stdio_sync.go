package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// sendNotification queues a notification in order with everything this
// goroutine queued before and after it. It is how progress is sent.
func (c *stdioConn) sendNotification(ctx context.Context, n mcpgo.JSONRPCNotification) error {
	b, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode notification %s: %w", n.Method, err)
	}
	select {
	case c.queue <- outMsg{b: b}:
		if rs, ok := ctx.Value(reqStateKey{}).(*reqState); ok {
			rs.notified.Store(true)
		}
		return nil
	case <-c.dead:
		return errConnClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flushNotifications returns once every notification that was in mcp-go's
// session channel when it was called has been queued for writing.
func (c *stdioConn) flushNotifications() {
	done := make(chan struct{})
	select {
	case c.barrier <- done:
		<-done
	case <-c.fwdDone:
	}
}

// MaxMissedPings is how many sync pings in a row a client may let time
// out before syncing is off for the rest of the connection.
const MaxMissedPings = 2

// unprovenSyncTimeout is the default bound of the wait for a sync ping's answer while the
// client has answered none of our pings: a client that does not answer
// pings is held up at most this long, MaxMissedPings times.
const unprovenSyncTimeout = 100 * time.Millisecond

// syncIDPrefix starts the ids of our pings.
const syncIDPrefix = `"cairn-sync-`

// syncClient makes sure the client has processed every notification
// queued so far before the caller writes a response. Order on the wire is
// not enough for every client: the official TypeScript SDK handles
// notifications in a later microtask but responses at once, so a progress
// notification read in the same chunk as its call's response is reported
// as having an "unknown token". syncClient sends a ping request (which
// every MCP peer must answer) behind the notifications and waits for the
// answer: a client answers it only after it handled what came before.
// The wait is Config.SyncTimeout for a client that answered a ping
// before, unprovenSyncTimeout for one that did not; syncing is off after
// MaxMissedPings unanswered in a row, and on again at a late answer.
func (c *stdioConn) syncClient(ctx context.Context) {
	if c.syncMissed.Load() >= MaxMissedPings {
		return
	}
	sentAt := time.Now()
	id, ch := c.sendPing()
	defer func() {
		c.syncMu.Lock()
		delete(c.syncPending, id)
		c.syncMu.Unlock()
	}()
	timeout := c.srv.syncTimeout
	if !c.syncAnswering.Load() {
		timeout = min(timeout, c.srv.unproven)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
		c.missed(sentAt)
	case <-ctx.Done(): // the client is gone
	case <-c.dead:
	}
}

// missed counts a sync ping sent at sentAt that timed out. Pings sent
// before the last miss was counted belong to the same round (concurrent
// calls syncing at once) and count once: a client is given up on after
// MaxMissedPings rounds in a row, not after one burst.
func (c *stdioConn) missed(sentAt time.Time) {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if !sentAt.After(c.lastMiss) {
		return
	}
	c.lastMiss = time.Now()
	if c.syncMissed.Add(1) == MaxMissedPings {
		c.srv.log.Warn("mcp: the client does not answer ping requests; progress notifications may reach it after responses")
	}
}

// sendPing queues a ping request and returns its id and the channel
// closed when its answer arrives.
func (c *stdioConn) sendPing() (string, chan struct{}) {
	c.syncMu.Lock()
	c.syncSeq++
	id := fmt.Sprintf(`%s%d"`, syncIDPrefix, c.syncSeq)
	ch := make(chan struct{})
	c.syncPending[id] = ch
	c.syncMu.Unlock()
	c.enqueue([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`))
	return id, ch
}

// syncAnswered delivers the answer to a sync ping; any answer to one of
// ours, late ones too, shows the client answers pings.
func (c *stdioConn) syncAnswered(id json.RawMessage) {
	if !strings.HasPrefix(string(id), syncIDPrefix) {
		return
	}
	c.syncAnswering.Store(true)
	c.syncMissed.Store(0)
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if ch, ok := c.syncPending[string(id)]; ok {
		close(ch)
		delete(c.syncPending, string(id))
	}
}

// forwardLoop moves notifications from the session channel (where mcp-go's
// SendNotificationToClient puts them) into the write queue, and serves
// flush barriers.
func (c *stdioConn) forwardLoop() {
	defer close(c.fwdDone)
	ch := c.session.notifications
	forward := func(n mcpgo.JSONRPCNotification) {
		b, err := json.Marshal(n)
		if err != nil {
			c.srv.log.Error("mcp: encode notification", "method", n.Method, "err", err)
			return
		}
		c.enqueue(b)
		c.forwarded.Add(1)
	}
	drain := func() {
		for {
			select {
			case n := <-ch:
				forward(n)
			default:
				return
			}
		}
	}
	for {
		select {
		case n := <-ch:
			forward(n)
		case done := <-c.barrier:
			drain()
			close(done)
		case <-c.fwdStop:
			drain()
			return
		}
	}
}
