package policy

import (
	"fmt"

	"github.com/cairnhq/cairn/internal/text"

	"github.com/cairnhq/cairn/store"
)

// DefaultPauseAfter is how many failed fires in a row pause an automation
// unless configured otherwise (automations.pause_after_failures).
const DefaultPauseAfter = 5

// CountOutcome updates st's failures in a row for a run that settled with
// status: a failed run adds one, a succeeded run resets the count, and
// any other end (cancelled, gone) leaves it alone, since it says nothing
// about whether the automation works.
func CountOutcome(st *store.AutomationState, status store.RunStatus) {
	switch status {
	case store.RunFailed:
		st.Failures++
	case store.RunSucceeded:
		st.Failures = 0
	}
}

// ShouldPause reports whether an automation with failures fires failed in
// a row is paused by a rule pausing after after of them (0: never).
func ShouldPause(enabled bool, failures int64, after int) bool {
	return enabled && after > 0 && failures >= int64(after)
}

// PlanRecord applies p to a as RecordAutomation does: it returns the
// record to store (a copy; a is not changed) and whether p paused it.
// A pause disables the automation with p.Pause.Note and bumps its
// revision, as a person's pause does; the failures are kept until it is
// resumed (ApplyUpdate resets them).
func PlanRecord(a *store.Automation, p store.RecordParams) (*store.Automation, bool, error) {
	st, err := ApplyRecord(a, p)
	if err != nil {
		return nil, false, err
	}
	next := store.CloneAutomation(a)
	next.State = st
	if p.Pause == nil || !ShouldPause(a.Enabled, st.Failures, p.Pause.After) {
		return next, false, nil
	}
	next.Enabled = false
	next.Note = p.Pause.Note
	next.Revision++
	next.UpdatedAt = store.Millis(store.At(p.Pause.At))
	return next, true, nil
}

// PauseNote is the note of an automation paused after failures fires
// failed in a row, the last with last: why, and how to resume it.
func PauseNote(key string, failures int64, last string) string {
	if last == "" {
		last = "no error recorded"
	}
	return fmt.Sprintf("by the scheduler after %d failed fires in a row (last: %s); fix the cause, then run: mcp-host automations resume %s", failures, text.OneLine(last, 300), key)
}
