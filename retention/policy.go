// Package retention decides which runs to forget and forgets them: a pure
// policy (Policy, Selector), a collector that deletes what it selects with
// the runs' journals and gives the database's space back (Collector), and
// a loop that collects periodically while a host is started (Loop).
package retention

import (
	"time"

	"github.com/cairnhq/cairn/store"
)

// Policy says how long settled runs are kept. Queued, running and waiting
// runs are never deleted.
type Policy struct {
	// MaxAge: a settled run that finished longer ago than this may be
	// deleted. Zero keeps every run.
	MaxAge time.Duration
	// KeepPerTarget: the newest runs of each target are kept whatever
	// their age.
	KeepPerTarget int
	// KeepPerAutomation: the newest runs each automation fired are kept
	// whatever their age.
	KeepPerAutomation int
}

// Laptop defaults (see the README's Configuration).
const (
	DefaultMaxAge            = 30 * 24 * time.Hour
	DefaultKeepPerTarget     = 100
	DefaultKeepPerAutomation = 100
)

// DefaultPolicy suits a laptop: runs older than 30 days go, except the
// newest 100 of each target and of each automation.
func DefaultPolicy() Policy {
	return Policy{MaxAge: DefaultMaxAge, KeepPerTarget: DefaultKeepPerTarget, KeepPerAutomation: DefaultKeepPerAutomation}
}

// Selector applies a Policy to runs seen newest first (the order of
// store.ListRuns): it counts each target's and automation's runs so far,
// so it needs one pass and memory for the counts only. Not safe for
// concurrent use.
type Selector struct {
	policy    Policy
	now       time.Time
	perTarget map[string]int
	perAuto   map[string]int
}

// NewSelector starts a pass at now.
func NewSelector(p Policy, now time.Time) *Selector {
	return &Selector{policy: p, now: now, perTarget: map[string]int{}, perAuto: map[string]int{}}
}

// Delete reports whether r, the next run newest first, is to be deleted.
// Every run counts towards its target's and automation's newest, whether
// it is deleted or not.
func (s *Selector) Delete(r *store.Run) bool {
	s.perTarget[r.Target]++
	rankTarget := s.perTarget[r.Target]
	rankAuto := 0
	if id := r.Trigger.AutomationID; id != "" {
		s.perAuto[id]++
		rankAuto = s.perAuto[id]
	}
	switch {
	case !r.Status.Settled() || s.policy.MaxAge <= 0:
		return false
	case rankTarget <= s.policy.KeepPerTarget:
		return false
	case rankAuto > 0 && rankAuto <= s.policy.KeepPerAutomation:
		return false
	}
	return s.now.Sub(endedAt(r)) > s.policy.MaxAge
}

// endedAt is when a settled run finished (its last change for a record
// without a finish time).
func endedAt(r *store.Run) time.Time {
	if !r.FinishedAt.IsZero() {
		return r.FinishedAt
	}
	if !r.UpdatedAt.IsZero() {
		return r.UpdatedAt
	}
	return r.CreatedAt
}
