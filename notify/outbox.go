package notify

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// OutboxOptions configure an Outbox. Zero values take the defaults.
type OutboxOptions struct {
	Store    store.OutboxStore
	Settings Settings
	Clock    clock.Clock
	Logger   *slog.Logger
	// Poll is the longest the loop sleeps without looking (rows another
	// process enqueued); 30s by default. It also wakes at the next due
	// row and on Kick.
	Poll time.Duration
	// MinBackoff doubles from one failed attempt to the next, up to
	// MaxBackoff (1s and 1h by default); after MaxAttempts (20) the row
	// is dropped.
	MinBackoff, MaxBackoff time.Duration
	MaxAttempts            int
	Client                 *http.Client // nil: no redirects, timeouts from Settings
	// Recorded, when set, is called after each attempt's outcome is
	// stored.
	Recorded func(store.NotificationOutcome)
}

// Outbox delivers the outbox's rows: any started host runs one, and a
// per-row claim (with a lease, so a crashed sender's rows come back)
// keeps two from sending one row at once. Start returns; Stop waits.
type Outbox struct {
	st       store.OutboxStore
	settings Settings
	clk      clock.Clock
	log      *slog.Logger
	opts     OutboxOptions
	client   *http.Client
	claim    string
	kick     chan struct{}

	mu       sync.Mutex
	cancel   context.CancelFunc
	done     chan struct{}
	stopped  bool
	draining bool // the loop ends after its next pass (Drain)
}

// NewOutbox returns a stopped Outbox.
func NewOutbox(o OutboxOptions) *Outbox {
	o.Poll = cmpOr(o.Poll, 30*time.Second)
	o.MinBackoff = cmpOr(o.MinBackoff, time.Second)
	o.MaxBackoff = cmpOr(o.MaxBackoff, time.Hour)
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 20
	}
	b := &Outbox{st: o.Store, settings: o.Settings, clk: clock.OrReal(o.Clock), log: o.Logger, opts: o, client: o.Client, claim: ids.New("claim"), kick: make(chan struct{}, 1)}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.client == nil {
		b.client = newClient()
	}
	return b
}

func cmpOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// lease is how long a claim holds: past the longest attempt.
func (b *Outbox) lease() time.Duration {
	d := time.Minute
	if w := b.settings.Webhook; w != nil {
		d += w.timeout()
	}
	return d
}

// Kick makes the loop look at once (a row was just enqueued).
func (b *Outbox) Kick() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// Start runs the delivery loop until Stop.
func (b *Outbox) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || b.cancel != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b.cancel, b.done = cancel, make(chan struct{})
	go b.loop(ctx)
	return nil
}

// Stop ends the loop and waits for it (an attempt in flight is cut
// short and comes back when its lease ends). Idempotent.
func (b *Outbox) Stop() {
	b.mu.Lock()
	b.stopped = true
	cancel, done := b.cancel, b.done
	b.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Drain makes the loop try the rows due now once more and end, waits for
// it at most limit, then stops it as Stop does. A row that fails is left
// for the retries of another process's loop.
func (b *Outbox) Drain(limit time.Duration) {
	b.mu.Lock()
	done := b.done
	running := b.cancel != nil && !b.stopped
	b.draining = running
	b.mu.Unlock()
	if running {
		b.Kick()
		t := time.NewTimer(limit)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
	}
	b.Stop()
}

func (b *Outbox) loop(ctx context.Context) {
	defer close(b.done)
	t := b.clk.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-b.kick:
		}
		if _, err := b.RunOnce(ctx); err != nil && ctx.Err() == nil {
			b.log.Warn("deliver notifications", "err", err)
		}
		b.mu.Lock()
		draining := b.draining
		b.mu.Unlock()
		if draining {
			return
		}
		wait := b.opts.Poll
		if next, ok, err := b.st.NextNotification(ctx); err == nil && ok {
			wait = min(wait, max(next.Sub(b.clk.Now()), 10*time.Millisecond))
		}
		t.Stop()
		t.Reset(wait)
	}
}

// RunOnce claims the rows due now and tries each once; it returns how
// many were sent.
func (b *Outbox) RunOnce(ctx context.Context) (int, error) {
	sent := 0
	for {
		rows, err := b.st.ClaimNotifications(ctx, store.ClaimNotificationsParams{Claim: b.claim, Now: b.clk.Now(), Lease: b.lease(), Limit: 16})
		if err != nil || len(rows) == 0 {
			return sent, err
		}
		for _, n := range rows {
			ok, err := b.attempt(ctx, n)
			if err != nil {
				return sent, err
			}
			if ok {
				sent++
			}
		}
	}
}

// attempt delivers n once and records the outcome.
func (b *Outbox) attempt(ctx context.Context, n *store.Notification) (bool, error) {
	derr := b.deliver(ctx, n)
	if ctx.Err() != nil {
		return false, ctx.Err() // stopping: the lease brings the row back
	}
	now := b.clk.Now()
	o := store.NotificationOutcome{ID: n.ID, Claim: b.claim, Now: now, Sent: derr == nil}
	if derr != nil {
		var perm *permanentError
		o.Error = clip(derr.Error(), 1024)
		o.Drop = errors.As(derr, &perm) || n.Attempts+1 >= b.opts.MaxAttempts
		o.NextAt = now.Add(b.backoff(n.Attempts + 1))
		b.log.Warn("notification not delivered", "id", n.ID, "attempt", n.Attempts+1, "dropped", o.Drop, "err", derr)
	} else {
		b.log.Info("notification sent", "id", n.ID, "attempt", n.Attempts+1)
	}
	if err := b.st.RecordNotification(context.WithoutCancel(ctx), o); err != nil {
		if errors.Is(err, store.ErrNotOwner) {
			return false, nil // our lease ran out: the new claimer records it
		}
		return false, err
	}
	if b.opts.Recorded != nil {
		b.opts.Recorded(o)
	}
	return derr == nil, nil
}

// backoff is the wait after the attempts-th failed attempt.
func (b *Outbox) backoff(attempts int) time.Duration {
	d := b.opts.MinBackoff
	for i := 1; i < attempts && d < b.opts.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, b.opts.MaxBackoff)
}
