package automations

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/cairnhq/cairn/automations/schedule"
	"github.com/cairnhq/cairn/store"
)

// Fires prepared ahead of their slot. Many cron automations are often due
// at the same instant (every minute, every hour on the hour). Firing each
// after the slot costs a pass over every automation, a run built per fire
// and one store operation each, so the last of a thousand fires would wait
// for all the others. Instead, when the earliest due time is within
// Config.Ahead, the leader prepares the fires due at it: their runs (input
// and literals), their missed counts and next due times, computed from the
// automations as the pass read them. At the slot it hands them to the
// store in slices (Config.FireSlice fires per FireMany, one transaction
// each), so that the early fires are durable without waiting for the late
// ones, and only then runs the pass that does the rest.
//
// A prepared fire is only a proposal. The store checks each one as it
// checks any fire (the unique slot, the cursor, the overlap policy) and
// also that the automation was not edited, its cursor did not move, and no
// buffered fire waits (store.FireExpect); one that fails is left to the
// pass after it, which fires the slot from a fresh read. Runs are not used
// when the targets changed since they were prepared (Targets implementing
// Version, as WorkflowTargets does), nor when the slot is no longer the
// one due (the scheduler woke too late).

// slot is a cron automation's next due time as a pass saw it.
type slot struct {
	a  *store.Automation
	at time.Time // the next slot
	// cursor is the automation's stored cursor once the pass recorded
	// what it did (zero before the first slot); from is where its
	// schedule counts from (the cursor, else the creation time).
	cursor, from time.Time
}

// armedSlot is the fires prepared for one slot.
type armedSlot struct {
	at      time.Time
	version string // the targets' Version when the runs were prepared
	fires   []armedFire
}

type armedFire struct {
	p   store.FireParams
	key string // the automation's, for the log
	// until is when the prepared fire stops being the one a pass would
	// decide: the automation's next slot, or the end of the grace.
	until time.Time
}

// versioned is implemented by Targets whose definitions can change
// (WorkflowTargets): Version changes when they do.
type versioned interface {
	Version() (string, error)
}

// targetsVersion returns the targets' version, or "" when they have none;
// ok is false when it could not be read.
func (s *Scheduler) targetsVersion() (v string, ok bool) {
	t, is := s.cfg.Targets.(versioned)
	if !is {
		return "", true
	}
	v, err := t.Version()
	if err != nil {
		return "", false
	}
	return v, true
}

// arm prepares the fires due at next when next is within Config.Ahead,
// reusing the runs prepared for it before when nothing they depend on
// changed. It returns when the leader should wake up: next, or Ahead
// before it when a cron slot is due at next and is not prepared yet.
func (s *Scheduler) arm(ctx context.Context, next time.Time) time.Time {
	s.mu.Lock()
	soon := slices.Clone(s.soon)
	s.mu.Unlock()
	soon = slices.DeleteFunc(soon, func(sl slot) bool { return !sl.at.Equal(next) })
	old := s.armed
	s.armed = nil
	if s.cfg.Ahead <= 0 || next.IsZero() || len(soon) == 0 {
		return next
	}
	if next.Sub(s.cfg.Clock.Now()) > s.cfg.Ahead {
		return next.Add(-s.cfg.Ahead)
	}
	// The version is read before the runs are built, so that a change
	// while they are built is noticed at the slot.
	version, ok := s.targetsVersion()
	if !ok {
		return next
	}
	reuse := map[string]armedFire{}
	if old != nil && old.at.Equal(next) && old.version == version {
		for _, f := range old.fires {
			reuse[f.p.AutomationID] = f
		}
	}
	armed := &armedSlot{at: next, version: version}
	var fresh []*store.Automation // due, with no run to reuse: prepared in one batch
	var freshAt []int
	for _, sl := range soon {
		a := sl.a
		if !a.State.Buffered.IsZero() {
			continue // the release comes first; the pass does both
		}
		c, err := s.cron(a.Trigger)
		if err != nil {
			continue
		}
		due := schedule.Due(c, schedule.DueParams{LastNominal: sl.from, Now: next, Policy: schedule.MissedPolicy(a.Missed)})
		if !due.Fire.Equal(next) {
			continue
		}
		expect := store.FireExpect{Revision: a.Revision, Cursor: sl.cursor}
		p := store.FireParams{AutomationID: a.ID, Nominal: next, Missed: int64(due.Missed), NextDue: due.Next, Expect: &expect}
		if f, ok := reuse[a.ID]; ok && f.p.Expect.Revision == expect.Revision && f.p.Expect.Cursor.Equal(expect.Cursor) &&
			f.p.Missed == p.Missed && f.p.NextDue.Equal(p.NextDue) {
			p.Run = f.p.Run
		} else {
			fresh, freshAt = append(fresh, a), append(freshAt, len(armed.fires))
		}
		until := next.Add(schedule.DefaultGrace)
		if !due.Next.IsZero() && due.Next.Before(until) {
			until = due.Next
		}
		armed.fires = append(armed.fires, armedFire{p: p, key: a.Key, until: until})
	}
	prepared, errs := s.prepareAll(ctx, fresh, next)
	for i, at := range freshAt {
		armed.fires[at].p.Run = prepared[i]
		_ = errs[i] // the pass at the slot meets the error and records it
	}
	armed.fires = slices.DeleteFunc(armed.fires, func(f armedFire) bool { return f.p.Run == nil })
	if len(armed.fires) > 0 {
		s.armed = armed
	}
	return next
}

// armedDue reports whether prepared fires wait and their slot has come.
func (s *Scheduler) armedDue() bool {
	return s.armed != nil && !s.cfg.Clock.Now().Before(s.armed.at)
}

// fireArmed commits the prepared fires in slices (fireSliced) once their
// slot has come. Fires it could not do are left to the pass that follows.
func (s *Scheduler) fireArmed(ctx context.Context) {
	armed := s.armed
	if armed == nil || s.cfg.Clock.Now().Before(armed.at) {
		return
	}
	s.armed = nil
	if v, ok := s.targetsVersion(); !ok || v != armed.version {
		return // the targets changed: the pass prepares the runs again
	}
	now := s.cfg.Clock.Now()
	ps := make([]store.FireParams, 0, len(armed.fires))
	keys := make([]string, 0, len(armed.fires))
	for _, f := range armed.fires {
		if now.Before(f.until) {
			p := f.p
			p.Actual = now
			ps, keys = append(ps, p), append(keys, f.key)
		}
	}
	if len(ps) == 0 {
		return
	}
	outs := s.fireSliced(ctx, ps)
	refused := 0
	var fired []int // indexes of the fires that queued a run
	s.mu.Lock()
	for i, o := range outs {
		switch {
		case o.Err != nil:
			refused++
		case !o.Result.AlreadyFired && o.Result.Run != nil:
			s.inflight[ps[i].AutomationID] = o.Result.Run.ID
			fired = append(fired, i)
		}
	}
	s.mu.Unlock()
	s.log.Info("fired prepared slot", "slot", armed.at, "fires", len(ps), "refused", refused, "lag", s.cfg.Clock.Now().Sub(armed.at))
	// Each fire, as the pass logs it (after the commits: no fire waits
	// on the log).
	if s.log.Enabled(ctx, slog.LevelInfo) {
		for _, i := range fired {
			s.log.Info("fired", "automation", keys[i], "slot", ps[i].Nominal, "run", outs[i].Result.Run.ID)
		}
	}
}
