package automations

import "time"

// An interval is measured on the wall clock from a recorded instant (the
// last finish, the creation, the last tick). When the clock steps back
// past that instant, "anchor + every" lies as far in the future as the
// step, and the automation would be silent that long. The scheduler then
// reads the clock shifted forward by the step, as it first saw it, so the
// cadence goes on (late by at most one visit, never early); the shift is
// dropped once the clock is past the anchor again (the clock set right).
// Nominal times stay after the recorded ones, as the store needs.

// stepBack is the shift of an automation's clock after a backward step,
// measured when the scheduler saw the clock behind anchor.
type stepBack struct {
	anchor time.Time
	shift  time.Duration
}

// clockShift returns how far to read automation id's clock forward so
// that now is not before anchor: 0 when it is not, else the shift first
// measured, grown if the clock went back further. With remeasure (an
// interval measured from completion) a new anchor is measured afresh:
// the run that set it finished about now, whatever the wall clock says;
// a fixed rate keeps its shift as its ticks advance.
func (s *Scheduler) clockShift(id string, anchor, now time.Time, remeasure bool) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !now.Before(anchor) {
		delete(s.stepped, id)
		return 0
	}
	sb, ok := s.stepped[id]
	if ok && !now.Add(sb.shift).Before(anchor) && (!remeasure || sb.anchor.Equal(anchor)) {
		return sb.shift
	}
	if !ok {
		s.log.Info("the wall clock went back past an interval's last instant: measuring the interval across the step",
			"automation", id, "anchor", anchor, "now", now)
	}
	sb = stepBack{anchor: anchor, shift: anchor.Sub(now)}
	s.stepped[id] = sb
	return sb.shift
}
